package partition

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// planState is what the loop keeps to decide which partitions are placed
// on this member; the decisions themselves are the planner's (see
// planner). Every member keeps a belief of who owns what: the
// placement it last computed. When the member list changes it places at
// once from that belief, so that members sharing a leaver's partitions, or
// shedding to a joiner, agree on who takes which without reading anything
// first; and the partitions that move are awaited by their new owners'
// campaigns before their old owners release them. A member short of its
// quota then reads every partition's holder in the background, a poll
// after each change of the member list (a quarter of a poll up to
// cheapReading partitions) and again while it stays short (every
// PollInterval up to cheapReading partitions, else every 2 × PollInterval,
// 4 × while campaigns wait), and places again from that reading, counting
// as its own the partitions it is campaigning for that the reading shows
// free (see planner.owners). In steady state every member holds its quota
// and reads nothing. A member that has not campaigned yet first probes a few
// partitions (see reader.probe): a joiner into a running group reads every
// holder and places from that; members starting together find the
// partitions free and place from nothing, reading none.
type planState struct {
	replan bool // placed must be recomputed
	// elsewhere holds the partitions placed here that another identity
	// holds, as this member knows: their campaigns wait behind the
	// holder, outside the window (see window).
	elsewhere map[int]bool
	seq       int       // member lists applied so far
	owners    []string  // who owns what: a reading, or the last placement; nil for none
	ownSeq    int       // seq of the member list when the last reading started
	readAt    time.Time // when the last reading started
	changedAt time.Time // when the member list last changed
	probed    bool      // the first reading (probe, then all holders) is in

	// awaited holds, for each partition placed here but held by another
	// identity as this member knows, that identity: a member expected to
	// hand it over, or a departed (crashed) member whose lease runs until it
	// expires. Members whose beliefs differ can each place a partition on
	// themselves, or each leave it to another: a member waits behind a
	// departed holder that another member's campaign beats, or behind a
	// member that takes the partition instead of handing it over, and what
	// each placement left to the other has no owner. So a member reads the
	// holders of its awaited partitions every PollInterval (see check), and
	// reads every holder at once when one turns out held by another member
	// than the one expected, or newly won by the expected one.
	awaited map[int]string
	seen    map[int]uint64 // token of each awaited partition's expected holder, as first checked
	checkAt time.Time      // when the awaited partitions' holders are next read
	readNow bool           // a check found a wrong belief: read every holder at once
	// raceWon: a partition awaited from a departed member was won, so the
	// departed member's leases are expiring. A member still short once it
	// awaits no departed member reads every holder at once: its placement
	// may have left some of the departed member's partitions to members
	// that do not take them.
	raceWon bool

	// lapsing holds, while this member is short of its quota, when to read
	// again the holder of each partition that the last reading showed held
	// by a departed member and that is placed on another member: at the
	// holder's lease's end when the driver tells its TTL, else every
	// PollInterval/lapseEvery (see lapseCheck). When members' lists
	// disagree, such a partition can be placed on a member whose own
	// placement leaves it to yet another, and nobody campaigns for it; it
	// is then taken only after a reading shows it free and places it anew.
	// Reading it at its lease's end rather than at the next poll saves up
	// to a poll (a takeover missed its bound, TTL + 1 s, by 0.26 s that
	// way in the partition chaos on etcd).
	lapsing map[int]time.Time
}

// replan recomputes l.placed when something it depends on changed, starts
// a reading of the holders when one is due, and returns when it next has
// something to do (a reading falling due). Its phases: outside the member
// list (replanOutside), placing (place), and reading holders (readNext).
func (l *loop) replan(ctx context.Context, now time.Time) time.Time {
	wake := now.Add(time.Hour)
	ps := &l.plan
	v := l.view
	parts := l.partsHeld()
	_, joined, held, quota := l.pl.standing(v.members, v.weights, parts)
	if l.stopping || !l.settled || !v.joined || !joined {
		l.replanOutside(ctx, now, parts)
		return wake
	}
	if ps.replan {
		ps.replan = false
		l.place(now, parts)
	}
	if ps.raceWon && !l.racingInFlight() {
		// No campaign races a departed member's lease any more: a member
		// still short reads every holder.
		ps.raceWon = false
		ps.readNow = ps.readNow || held < quota
	}
	return earliest(wake, l.readNext(ctx, now, held < quota))
}

// partsHeld returns the partitions with a lease here: true while owned,
// false while handed over.
func (l *loop) partsHeld() map[int]bool {
	parts := make(map[int]bool, len(l.parts))
	for p, pt := range l.parts {
		parts[p] = pt.reason == nil
	}
	return parts
}

// replanOutside is replan while this member is stopping, not settled or
// out of the member list: it starts the first reading, and places nothing
// new (see planner.keep).
func (l *loop) replanOutside(ctx context.Context, now time.Time, parts map[int]bool) {
	ps := &l.plan
	if !l.stopping && !l.rd.busy && ps.readAt.IsZero() {
		// A first reading tells a joiner whether the group runs
		// already (see onView), and what it holds. It starts with a
		// probe of a few partitions, so that members starting
		// together (finding them free) do not each read all n. It
		// starts at once, while the membership scans and joins: a
		// joiner's reading is on the critical path of its join.
		l.readHolders(ctx, now, true)
	}
	if ps.replan {
		ps.replan = false
		l.placed = l.pl.keep(parts, l.settled && !l.stopping)
		clear(l.retries)
	}
}

// place asks the planner for the placement on this member, given parts
// (see partsHeld), and applies it; reconcile then campaigns for, hands
// over and awaits accordingly.
func (l *loop) place(now time.Time, parts map[int]bool) {
	ps := &l.plan
	d := l.pl.place(planInput{
		members: l.view.members, weights: l.view.weights, owners: ps.owners,
		parts: parts, placed: l.placed, awaited: ps.awaited, now: now,
	})
	l.placed, ps.owners, ps.elsewhere, ps.awaited = d.placed, d.owners, d.elsewhere, d.awaited
	if !d.checkAt.IsZero() {
		ps.checkAt = d.checkAt
	}
	for p := range ps.seen {
		if _, ok := ps.awaited[p]; !ok {
			delete(ps.seen, p)
		}
	}
	for p := range l.retries {
		if !l.placed[p] {
			delete(l.retries, p)
		}
	}
}

// readNext starts the next reading of holders when the reader is idle,
// the most urgent kind first: every holder, when a check found the belief
// wrong or a race with a departed member ended (readNow); the awaited
// partitions' holders, when due (see check); the lapsing partitions'
// holders, when due, for a member short of its quota in a group of at most
// cheapReading partitions (see lapseCheck); every holder, when due, for a
// member short of its quota (see readWhenDue). It returns when one next
// falls due; while a reading is in flight, its outcome wakes the loop.
func (l *loop) readNext(ctx context.Context, now time.Time, short bool) time.Time {
	ps := &l.plan
	wake := now.Add(time.Hour)
	if l.rd.busy {
		return wake
	}
	if ps.readNow {
		ps.readNow = false
		l.readHolders(ctx, now, false)
		return wake
	}
	if len(ps.awaited) > 0 {
		if !now.Before(ps.checkAt) {
			l.check(ctx, now)
		}
		if l.rd.busy {
			return wake
		}
		wake = earliest(wake, ps.checkAt)
	}
	if short && l.a.n <= cheapReading {
		wake = earliest(wake, l.lapseCheck(ctx, now))
		if l.rd.busy {
			return wake
		}
	}
	if !short {
		return wake
	}
	return earliest(wake, l.readWhenDue(ctx, now))
}

// readWhenDue starts a reading of every holder, for a member short of its
// quota, once one is due (see planner.readDue); otherwise it returns when
// one is.
func (l *loop) readWhenDue(ctx context.Context, now time.Time) time.Time {
	ps := &l.plan
	due := l.pl.readDue(readSchedule{
		now: now, current: ps.ownSeq == ps.seq, readAt: ps.readAt, changedAt: ps.changedAt,
		waiting: len(l.camps) > 0, cut: l.win.Cut(),
	})
	if now.Before(due) {
		return due
	}
	l.readHolders(ctx, now, false)
	return now.Add(time.Hour)
}

// racingInFlight reports whether a campaign for a partition awaited from a
// departed member is under way.
func (l *loop) racingInFlight() bool {
	for p, id := range l.plan.awaited {
		if c := l.camps[p]; c != nil && !c.cancelled && !l.isMember(id) {
			return true
		}
	}
	return false
}

// isMember reports whether id is in the member list this member applied.
func (l *loop) isMember(id string) bool {
	return isMember(l.view.members, id)
}

// readHolders starts a reading of every partition's holder (see
// reader.holders), first a probe when probe is set; the outcome comes back
// on the reader's read channel.
func (l *loop) readHolders(ctx context.Context, now time.Time, probe bool) {
	ps := &l.plan
	ps.readAt = now
	// Once campaigns have failed, a reading keeps within the window too.
	par := readParallelism
	if !l.win.Cut().IsZero() {
		par = min(par, l.win.Size())
	}
	l.rd.holders(ctx, ps.seq, par, probe)
}

// onHolders handles a reading of the holders.
func (l *loop) onHolders(ctx context.Context, r holdersRead) {
	ps := &l.plan
	ps.probed = true
	if r.failed {
		l.win.Shrink(ps.readAt, time.Now())
	}
	switch {
	case r.err == nil && r.owners == nil: // a probe found the group starting
	case r.err == nil:
		ps.owners, ps.ownSeq, ps.replan = r.owners, r.seq, true
		ps.lapsing = l.pl.lapsing(l.view.members, r.owners, r.ttls, ps.readAt)
		l.a.log.LogAttrs(ctx, slog.LevelDebug, "read the holders", slog.Int("held", len(l.parts)),
			slog.Int("placed", len(l.placed)), slog.Int("campaigns", len(l.camps)), slog.Int("retries", len(l.retries)),
			slog.Any("holders", r.owners))
		// The probe found the group running: place from this reading at
		// once. Requiring every partition held (as the probe's own
		// check) made a joiner whose reading saw the others' first
		// hand-overs to it wait for the next poll.
		if !l.settled && l.view.joined && l.view.complete {
			l.settle(ctx)
		}
	case ctx.Err() == nil:
		l.stop(fmt.Errorf("partition: read the holders of %q: %w", l.a.group, r.err))
	}
}

// check reads, in the background, the holders of the awaited partitions
// this member is campaigning for; the outcome comes back on
// the reader's checked channel.
func (l *loop) check(ctx context.Context, now time.Time) {
	ps := &l.plan
	ps.checkAt = now.Add(l.a.opts.PollInterval)
	var parts []int
	for p := range ps.awaited {
		if c := l.camps[p]; c != nil && !c.cancelled {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return
	}
	l.rd.parts(ctx, parts, l.rd.checked)
}

// onCheck handles a reading of the awaited partitions' holders: when the
// planner finds one that contradicts the belief (see planner.judge), what
// this member's placement left to another member may be placed on nobody,
// so it reads every holder at once and places again from that.
func (l *loop) onCheck(ctx context.Context, r partsRead) {
	ps := &l.plan
	v := l.pl.judge(l.view.members, ps.awaited, ps.seen, r.parts, r.holders, r.errs)
	ps.seen = v.seen
	if v.wrong < 0 {
		return
	}
	if v.again {
		l.a.log.LogAttrs(ctx, slog.LevelDebug, "awaited partition won again by its holder; reading the holders",
			slog.Int("partition", v.wrong), slog.String("holder", v.holder))
	} else {
		l.a.log.LogAttrs(ctx, slog.LevelDebug, "awaited partition held by another member; reading the holders",
			slog.Int("partition", v.wrong), slog.String("holder", v.holder), slog.String("expected", ps.awaited[v.wrong]))
	}
	ps.readNow = true
	delete(ps.awaited, v.wrong) // expected from the reading's holder from now on
}

// lapseCheck reads, in the background, the holders of the lapsing
// partitions that are due and placed on another member (a campaign of this
// member's waits for the others); the outcome comes back on
// the reader's lapsed channel. It returns when the next one falls due.
func (l *loop) lapseCheck(ctx context.Context, now time.Time) time.Time {
	ps := &l.plan
	wake := now.Add(time.Hour)
	var parts []int
	for p, at := range ps.lapsing {
		switch {
		case l.placed[p] || l.parts[p] != nil:
			delete(ps.lapsing, p)
		case now.Before(at):
			wake = earliest(wake, at)
		default:
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return wake
	}
	l.rd.parts(ctx, parts, l.rd.lapsed)
	return wake
}

// onLapse handles a reading of lapsing partitions' holders. One found free
// was left to a member that does not take it, as far as this member
// knows: it reads every holder at once and places again from that.
func (l *loop) onLapse(ctx context.Context, r partsRead) {
	ps := &l.plan
	now, me := time.Now(), l.a.opts.Identity
	for i, p := range r.parts {
		if _, ok := ps.lapsing[p]; !ok {
			continue
		}
		h := r.holders[i]
		switch {
		case r.errs[i] != nil:
			ps.lapsing[p] = now.Add(l.pl.lapseAfter(0))
		case h.Identity == "":
			delete(ps.lapsing, p)
			if !ps.readNow {
				l.a.log.LogAttrs(ctx, slog.LevelDebug, "a departed member's partition is free; reading the holders", slog.Int("partition", p))
			}
			ps.readNow = true
		case h.Identity == me || l.isMember(h.Identity):
			delete(ps.lapsing, p)
		default:
			ps.lapsing[p] = now.Add(l.pl.lapseAfter(h.TTL))
		}
	}
}
