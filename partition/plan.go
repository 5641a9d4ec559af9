package partition

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/leaderkit/elector/backend"
)

// probeReads is how many partitions' holders a member reads before it
// first campaigns, to tell a cold start from a join.
const probeReads = 8

// cheapReading is the most partitions whose holders a member short of its
// quota reads every poll; larger groups read every 2 polls, 4 while
// campaigns wait (see replan).
const cheapReading = 256

// changeEvery divides PollInterval into the wait, after a change of the
// member list, before a member short of its quota reads every holder, in
// groups of at most cheapReading partitions (see replan).
const changeEvery = 4

// readParallelism bounds the concurrent Leader reads of a member reading
// every partition's holder.
const readParallelism = 32

// planState is how the loop decides which partitions are placed on this
// member (see [Place]). Every member keeps a belief of who owns what: the
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
// free (see ownersNow). In steady state every member holds its quota and reads
// nothing. A member that has not campaigned yet first probes a few
// partitions (see probe): a joiner into a running group reads every
// holder and places from that; members starting together find the
// partitions free and place from nothing, reading none.
type planState struct {
	replan bool // placed must be recomputed
	// elsewhere holds the partitions placed here that another identity
	// holds, as this member knows: their campaigns wait behind the
	// holder, outside the window (see window).
	elsewhere map[int]bool
	seq       int              // member lists applied so far
	owners    []string         // who owns what: a reading, or the last placement; nil for none
	ownSeq    int              // seq of the member list when the last reading started
	reading   bool             // a reading is in flight
	readAt    time.Time        // when the last reading started
	changedAt time.Time        // when the member list last changed
	probed    bool             // the first reading (probe, then all holders) is in
	read      chan holdersRead // a reading's outcome

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
	awaited  map[int]string
	seen     map[int]uint64 // token of each awaited partition's expected holder, as first checked
	checkAt  time.Time      // when the awaited partitions' holders are next read
	checking bool           // such a reading is in flight
	checked  chan partsRead
	readNow  bool // a check found a wrong belief: read every holder at once
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
	lapsing   map[int]time.Time
	lapseBusy bool // a reading of lapsing partitions is in flight
	lapsed    chan partsRead
}

// lapseEvery is, as a fraction of PollInterval, how often a member short
// of its quota reads the holder of a partition held by a departed member
// whose lease's end it cannot tell (ZooKeeper; an etcd lease within its
// last second).
const lapseEvery = 4

// lapseMargin is, as a fraction of PollInterval, how long after the end
// of a departed member's lease, as its TTL told, its partition is read
// again: the store's expiry lags (etcd revokes expired leases every
// 500 ms; it is then read every PollInterval/lapseEvery).
const lapseMargin = 20

// partsRead is the outcome of one reading of some partitions' holders
// (see readParts): holders[i] is the holder of parts[i] (zero for none),
// unless errs[i] is set.
type partsRead struct {
	parts   []int
	holders []backend.Holder
	errs    []error
}

// holdersRead is the outcome of one reading of the partitions' holders.
type holdersRead struct {
	seq    int
	owners []string
	ttls   []time.Duration // each holder's TTL, when the driver tells it
	err    error
	failed bool // some reads failed transiently: the store is loaded
}

// replan recomputes l.placed when something it depends on changed, starts
// a reading of the holders when one is due, and returns when it next has
// something to do (a reading falling due). Its phases: outside the member
// list (replanOutside), placing (place), following up on what the
// placement awaits (followUp), and reading every holder when due
// (readWhenDue).
func (l *loop) replan(ctx context.Context, now time.Time) time.Time {
	wake := now.Add(time.Hour)
	ps := &l.plan
	v := l.view
	i, joined := slices.BinarySearch(v.members, l.a.opts.Identity)
	if l.stopping || !l.settled || !v.joined || !joined {
		l.replanOutside(ctx, now)
		return wake
	}
	held := 0
	for _, pt := range l.parts {
		if pt.reason == nil {
			held++
		}
	}
	quota := QuotasWeighted(l.a.group, l.a.n, v.members, v.weights)[i]
	if ps.replan {
		ps.replan = false
		l.place(now, i, held, quota)
	}
	wake = earliest(wake, l.followUp(ctx, now, held, quota))
	if ps.readNow && !ps.reading {
		ps.readNow = false
		l.readHolders(ctx, now, false)
		return wake
	}
	if held < quota && !ps.reading && l.a.n <= cheapReading {
		wake = earliest(wake, l.lapseCheck(ctx, now))
	}
	if held >= quota || ps.reading {
		return wake
	}
	return earliest(wake, l.readWhenDue(ctx, now))
}

// replanOutside is replan while this member is stopping, not settled or
// out of the member list: it starts the first reading, and places nothing
// new (see placeHeld).
func (l *loop) replanOutside(ctx context.Context, now time.Time) {
	ps := &l.plan
	if !l.stopping && !ps.reading && ps.readAt.IsZero() {
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
		l.placeHeld()
	}
}

// place recomputes l.placed, this member being member i of the member list
// and holding held partitions of its quota, from who owns what as it knows
// (see ownersNow), and what each partition placed here awaits.
func (l *loop) place(now time.Time, i, held, quota int) {
	ps := &l.plan
	v := l.view
	owners, claimed := l.ownersNow(held, quota)
	at := PlaceWeighted(l.a.group, l.a.n, v.members, v.weights, owners)
	believed := make([]string, l.a.n)
	l.placed = make(map[int]bool)
	ps.elsewhere = make(map[int]bool)
	awaited := ps.awaited
	ps.awaited = make(map[int]string)
	for p, k := range at {
		believed[p] = v.members[k]
		if k != i {
			continue
		}
		l.placed[p] = true
		if owners[p] != "" && owners[p] != l.a.opts.Identity {
			ps.elsewhere[p] = true
		}
		if l.parts[p] != nil {
			continue
		}
		// Awaited from the same holder until won: a later placement,
		// from the belief rather than a reading, no longer names a
		// departed holder.
		switch id, ok := awaited[p]; {
		case ok:
			ps.awaited[p] = id
		case claimed[p] != "":
			ps.awaited[p] = claimed[p]
		case ps.elsewhere[p]:
			ps.awaited[p] = owners[p]
		}
	}
	if len(awaited) == 0 && len(ps.awaited) > 0 {
		ps.checkAt = now.Add(l.a.opts.PollInterval)
	}
	for p := range ps.seen {
		if _, ok := ps.awaited[p]; !ok {
			delete(ps.seen, p)
		}
	}
	ps.owners = believed
	l.forgetRetries()
}

// followUp reads the holders of the awaited partitions when due (see
// check) and, once no campaign races a departed member's lease any more,
// asks for a reading of every holder if this member is short. It returns
// when the next check is due.
func (l *loop) followUp(ctx context.Context, now time.Time, held, quota int) time.Time {
	ps := &l.plan
	wake := now.Add(time.Hour)
	if len(ps.awaited) > 0 && !ps.checking {
		if !now.Before(ps.checkAt) {
			l.check(ctx, now)
		}
		if !ps.checking {
			wake = earliest(wake, ps.checkAt)
		}
	}
	if ps.raceWon && !l.racingInFlight() {
		ps.raceWon = false
		ps.readNow = ps.readNow || held < quota
	}
	return wake
}

// readWhenDue starts a reading of every holder, for a member short of its
// quota, once one is due; otherwise it returns when one is.
func (l *loop) readWhenDue(ctx context.Context, now time.Time) time.Time {
	ps := &l.plan
	// Each reading is n Leader reads: on a cold start every member is
	// short, and reading each poll overloaded a Redlock quorum (1,024
	// partitions over 10 members, 100,000 Redis requests a second). A
	// group of at most cheapReading partitions reads each poll: a member
	// short because the beliefs left a partition to nobody learns it
	// within a poll rather than four (hand-overs 0.1-0.4 s over the 2 s
	// bound after a ZooKeeper kill-majority in the partition chaos).
	every := l.a.opts.PollInterval
	if l.a.n > cheapReading {
		every *= 2
		if len(l.camps) > 0 {
			every *= 2
		}
	}
	if ps.ownSeq == ps.seq && !ps.readAt.IsZero() && now.Before(ps.readAt.Add(every)) {
		return ps.readAt.Add(every)
	}
	// After a change of the member list, the hand-overs placed from the
	// belief complete within about a poll (the others notice the change,
	// the leaver has released already); only a member still short then
	// reads. Every member reading n holders at once as it applied a leave
	// would put members × n reads on the store at once, and the reading
	// that matters (the one finding a partition the beliefs placed on
	// nobody) would come last. A group of at most cheapReading partitions
	// waits a quarter of a poll: a reading there is cheap, and a member
	// made short by a leave learns within it of a partition the others'
	// readings placed on the leaver, rather than a poll later, past the
	// TTL + 1 s bound of a take-over.
	settle := l.a.opts.PollInterval
	if l.a.n <= cheapReading {
		settle /= changeEvery
	}
	if due := ps.changedAt.Add(settle); ps.ownSeq != ps.seq && now.Before(due) {
		return due
	}
	// Campaigns failing (the window was cut) mean a loaded store: a
	// reading of n holders would add to the load that fails them. Read
	// once a round of campaigns has gone by without a failure.
	if ps.ownSeq == ps.seq && l.win.Congested(now, every) {
		return l.win.Cut().Add(every)
	}
	l.readHolders(ctx, now, false)
	return now.Add(time.Hour)
}

// placeHeld places on this member, while it is not in the member list,
// nothing new: only what it holds when it has settled and is not stopping.
func (l *loop) placeHeld() {
	l.placed = map[int]bool{}
	clear(l.retries)
	if l.settled && !l.stopping {
		// Out of the member list (the slot's lease lapsed; it rejoins):
		// keep what is held, safe under its own leases, and take nothing
		// new. The others wait in its partitions' campaigns meanwhile,
		// and give up once it is back.
		for p, pt := range l.parts {
			if pt.reason == nil {
				l.placed[p] = true
			}
		}
	}
}

// ownersNow returns who owns what as this member knows it: the last reading
// or placement (none before the first), corrected by what this member knows
// for sure — the partitions it holds, and those it no longer does (ended,
// or being handed over) as free. While it holds less than quota, the
// partitions it still wants (campaigning or backing off) that are free or
// held by a non-member count as its own too, as long as they and the
// partitions it holds fit in quota: a reading taken while campaigns are
// under way does not show them, and placing them anew could hand them to
// another member that the previous placement gave others.
func (l *loop) ownersNow(held, quota int) ([]string, map[int]string) {
	me := l.a.opts.Identity
	owners := slices.Clone(l.plan.owners)
	if owners == nil {
		owners = make([]string, l.a.n)
	}
	for p, id := range owners {
		if id == me {
			owners[p] = ""
		}
	}
	for p, pt := range l.parts {
		if pt.reason == nil {
			owners[p] = me
		}
	}
	var wanted []int
	for p := range l.placed {
		if l.parts[p] == nil {
			if !l.isMember(owners[p]) {
				wanted = append(wanted, p)
			}
		}
	}
	claimed := make(map[int]string) // the departed holder of each claimed partition
	if held+len(wanted) <= quota {
		for _, p := range wanted {
			if owners[p] != "" {
				claimed[p] = owners[p]
			}
			owners[p] = me
		}
	}
	return owners, claimed
}

// forgetRetries drops the backoffs of partitions no longer placed here.
func (l *loop) forgetRetries() {
	for p := range l.retries {
		if !l.placed[p] {
			delete(l.retries, p)
		}
	}
}

// readHolders reads every partition's holder in the background; the
// outcome comes back on l.plan.read. When probe is set it first reads
// probeReads partitions spread over the n, and reads no further (the
// outcome has no owners) unless each of them is held by another member.
func (l *loop) readHolders(ctx context.Context, now time.Time, probe bool) {
	ps := &l.plan
	ps.reading, ps.readAt = true, now
	seq, group, me := ps.seq, l.a.group, l.a.opts.Identity
	// Once campaigns have failed, a reading keeps within the window too.
	par := readParallelism
	if !l.win.Cut().IsZero() {
		par = min(par, l.win.Size())
	}
	go func() {
		r := holdersRead{seq: seq}
		if probe && !l.probe(ctx, me) {
			r.err = ctx.Err()
			l.plan.read <- r
			return
		}
		hs, errs := readHolders(ctx, l.a.b, l.a.n, par, func(p int) string { return Election(group, p) })
		r.err = ctx.Err()
		for _, err := range errs {
			if r.err == nil && backend.IsPermanent(err) {
				r.err = err
			}
			r.failed = r.failed || err != nil
		}
		// A holder that could not be read counts as none: the placement
		// may then place a held partition, whose campaign just waits.
		if r.err == nil {
			r.owners, r.ttls = make([]string, len(hs)), make([]time.Duration, len(hs))
			for p, h := range hs {
				r.owners[p], r.ttls[p] = h.Identity, h.TTL
			}
		}
		l.plan.read <- r
	}()
}

// probe reports whether probeReads partitions spread over the n all have a
// holder other than me: whether the group runs already.
func (l *loop) probe(ctx context.Context, me string) bool {
	k := min(probeReads, l.a.n)
	hs, errs := readHolders(ctx, l.a.b, k, k, func(i int) string { return Election(l.a.group, i*l.a.n/k) })
	for i := range hs {
		if errs[i] != nil || hs[i].Identity == "" || hs[i].Identity == me {
			return false
		}
	}
	return true
}

// onHolders handles a reading of the holders.
func (l *loop) onHolders(ctx context.Context, r holdersRead) {
	ps := &l.plan
	ps.reading, ps.probed = false, true
	if r.failed {
		l.win.Shrink(ps.readAt, time.Now())
	}
	switch {
	case r.err == nil && r.owners == nil: // a probe found the group starting
	case r.err == nil:
		ps.owners, ps.ownSeq, ps.replan = r.owners, r.seq, true
		l.noteLapsing(r)
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
	_, ok := slices.BinarySearch(l.view.members, id)
	return ok
}

// check reads, in the background, the holders of the awaited partitions
// this member is campaigning for; the outcome comes back on
// l.plan.checked.
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
	ps.checking = true
	l.readParts(ctx, parts, ps.checked)
}

// readParts reads the holders of parts in the background and sends the
// outcome on out.
func (l *loop) readParts(ctx context.Context, parts []int, out chan<- partsRead) {
	group := l.a.group
	go func() {
		hs, errs := readHolders(ctx, l.a.b, len(parts), readParallelism, func(i int) string { return Election(group, parts[i]) })
		out <- partsRead{parts: parts, holders: hs, errs: errs}
	}()
}

// onCheck handles a reading of the awaited partitions' holders. One held
// by another member than expected (it beat this member to a departed
// member's partition), or newly won by the expected member (it took the
// partition rather than hand it over), means this member's belief was
// wrong, and what its placement left to that member may be placed on
// nobody: it reads every holder at once and places again from that.
func (l *loop) onCheck(ctx context.Context, r partsRead) {
	ps := &l.plan
	ps.checking = false
	if ps.seen == nil {
		ps.seen = make(map[int]uint64)
	}
	me := l.a.opts.Identity
	for i, p := range r.parts {
		h := r.holders[i]
		want, ok := ps.awaited[p]
		if !ok || r.errs[i] != nil || h.Identity == me {
			continue
		}
		if h.Identity == "" || !l.isMember(h.Identity) {
			if l.isMember(want) {
				ps.seen[p] = 0 // the member expected to hand it over does not hold it
			}
			continue // free, or still a departed member's
		}
		tok, seen := ps.seen[p]
		switch {
		case h.Identity != want:
			l.a.log.LogAttrs(ctx, slog.LevelDebug, "awaited partition held by another member; reading the holders",
				slog.Int("partition", p), slog.String("holder", h.Identity), slog.String("expected", want))
		case seen && tok != h.Token:
			l.a.log.LogAttrs(ctx, slog.LevelDebug, "awaited partition won again by its holder; reading the holders",
				slog.Int("partition", p), slog.String("holder", h.Identity))
		default:
			ps.seen[p] = h.Token
			continue
		}
		ps.readNow = true
		delete(ps.awaited, p) // expected from the reading's holder from now on
		return
	}
}

// noteLapsing records, from reading r, when to read again each partition
// held by a departed member (see planState.lapsing).
func (l *loop) noteLapsing(r holdersRead) {
	ps := &l.plan
	ps.lapsing = nil
	me := l.a.opts.Identity
	for p, id := range r.owners {
		if id == "" || id == me || l.isMember(id) {
			continue
		}
		if ps.lapsing == nil {
			ps.lapsing = make(map[int]time.Time)
		}
		ps.lapsing[p] = ps.readAt.Add(l.lapseAfter(r.ttls[p]))
	}
}

// lapseAfter returns how long after reading a departed member's partition
// with a lease of ttl left (0: unknown) to read it again.
func (l *loop) lapseAfter(ttl time.Duration) time.Duration {
	poll := l.a.opts.PollInterval
	return max(ttl+poll/lapseMargin, poll/lapseEvery)
}

// lapseCheck reads, in the background, the holders of the lapsing
// partitions that are due and placed on another member (a campaign of this
// member's waits for the others); the outcome comes back on
// l.plan.lapsed. It returns when the next one falls due.
func (l *loop) lapseCheck(ctx context.Context, now time.Time) time.Time {
	ps := &l.plan
	wake := now.Add(time.Hour)
	if ps.lapseBusy {
		return wake
	}
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
	ps.lapseBusy = true
	l.readParts(ctx, parts, ps.lapsed)
	return wake
}

// onLapse handles a reading of lapsing partitions' holders. One found free
// was left to a member that does not take it, as far as this member
// knows: it reads every holder at once and places again from that.
func (l *loop) onLapse(ctx context.Context, r partsRead) {
	ps := &l.plan
	ps.lapseBusy = false
	now, me := time.Now(), l.a.opts.Identity
	for i, p := range r.parts {
		if _, ok := ps.lapsing[p]; !ok {
			continue
		}
		h := r.holders[i]
		switch {
		case r.errs[i] != nil:
			ps.lapsing[p] = now.Add(l.lapseAfter(0))
		case h.Identity == "":
			delete(ps.lapsing, p)
			if !ps.readNow {
				l.a.log.LogAttrs(ctx, slog.LevelDebug, "a departed member's partition is free; reading the holders", slog.Int("partition", p))
			}
			ps.readNow = true
		case h.Identity == me || l.isMember(h.Identity):
			delete(ps.lapsing, p)
		default:
			ps.lapsing[p] = now.Add(l.lapseAfter(h.TTL))
		}
	}
}
