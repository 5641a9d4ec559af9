package partition

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/leaderkit/elector/backend"
)

// probeReads is how many partitions' holders a member reads before it
// first campaigns, to tell a cold start from a join.
const probeReads = 8

// readParallelism bounds the concurrent Leader reads of a member reading
// every partition's holder.
const readParallelism = 32

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

// racingInFlight reports whether a campaign for a partition awaited from a
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

// onCheck handles a reading of the awaited partitions' holders: when the
// planner finds one that contradicts the belief (see planner.judge), what
// this member's placement left to another member may be placed on nobody,
// so it reads every holder at once and places again from that.
func (l *loop) onCheck(ctx context.Context, r partsRead) {
	ps := &l.plan
	ps.checking = false
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
