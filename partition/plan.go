package partition

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/leaderkit/elector/backend"
)

// readParallelism bounds the concurrent Leader reads of a member reading
// every partition's holder.
const readParallelism = 32

// planState is how the loop decides which partitions are placed on this
// member (see [Place]). A member holding its quota or more needs nothing but
// what it holds: it keeps the quota it ranks highest and hands over the
// rest. A member short of its quota reads every partition's holder, in the
// background, after each change of the member list, and again while it
// stays short (every 2 × PollInterval, 4 × while campaigns wait), and
// campaigns for what the placement computed from that reading gives it.
// In steady state every member holds its quota and reads nothing.
type planState struct {
	replan  bool             // placed must be recomputed
	seq     int              // member lists applied so far
	owners  []string         // the last reading of the holders, nil for none
	ownSeq  int              // seq of the member list when that reading started
	reading bool             // a reading is in flight
	readAt  time.Time        // when the last reading started
	read    chan holdersRead // a reading's outcome
}

// holdersRead is the outcome of one reading of the partitions' holders.
type holdersRead struct {
	seq    int
	owners []string
	err    error
}

// replan recomputes l.placed when something it depends on changed, starts
// a reading of the holders when one is due, and returns when it next has
// something to do (a reading falling due).
func (l *loop) replan(ctx context.Context, now time.Time) time.Time {
	wake := now.Add(time.Hour)
	ps := &l.plan
	v := l.view
	i, joined := slices.BinarySearch(v.members, l.a.opts.Identity)
	if l.stopping || !l.settled || !v.joined || !joined {
		if ps.replan {
			ps.replan = false
			l.placed = map[int]bool{}
			clear(l.retries)
		}
		return wake
	}
	quota := Quotas(l.a.group, l.a.n, v.members)[i]
	var held []int
	for p, pt := range l.parts {
		if pt.reason == nil {
			held = append(held, p)
		}
	}
	if len(held) >= quota {
		if ps.replan {
			ps.replan = false
			l.placed = keepBest(l.a.group, v.members, i, held, quota)
			l.forgetRetries()
		}
		return wake
	}
	if ps.replan {
		ps.replan = false
		l.placed = make(map[int]bool)
		for _, p := range held {
			l.placed[p] = true
		}
		// A member holding partitions places from a reading started after
		// the latest change of the member list, so that members sharing a
		// leaver's partitions agree on who takes which. A member holding
		// nothing (a cold start, a joiner) places at once from what it
		// has, as if nobody held anything before its first reading: there
		// reading n holders can take long on a loaded store, and a campaign
		// for a partition another member keeps just waits until the
		// reading cancels it.
		if len(held) == 0 || (ps.owners != nil && ps.ownSeq == ps.seq) {
			for p, at := range Place(l.a.group, l.a.n, v.members, l.ownersNow()) {
				if at == i {
					l.placed[p] = true
				}
			}
		}
		l.forgetRetries()
	}
	if ps.reading {
		return wake
	}
	every := 2 * l.a.opts.PollInterval
	if len(l.camps) > 0 {
		every *= 2
	}
	if ps.ownSeq == ps.seq && ps.owners != nil && now.Before(ps.readAt.Add(every)) {
		return ps.readAt.Add(every)
	}
	l.readHolders(ctx, now)
	return wake
}

// ownersNow returns the last reading of the holders (none before the
// first) corrected by what this member knows for sure: the partitions it holds, and those it no longer
// does (ended, or being handed over) as free.
func (l *loop) ownersNow() []string {
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
	return owners
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
// outcome comes back on l.plan.read.
func (l *loop) readHolders(ctx context.Context, now time.Time) {
	ps := &l.plan
	ps.reading, ps.readAt = true, now
	seq, group := ps.seq, l.a.group
	go func() {
		hs, errs := readHolders(ctx, l.a.b, l.a.n, readParallelism, func(p int) string { return Election(group, p) })
		r := holdersRead{seq: seq, err: ctx.Err()}
		for _, err := range errs {
			if r.err == nil && backend.IsPermanent(err) {
				r.err = err
			}
		}
		// A holder that could not be read counts as none: the placement
		// may then place a held partition, whose campaign just waits.
		if r.err == nil {
			r.owners = make([]string, len(hs))
			for p, h := range hs {
				r.owners[p] = h.Identity
			}
		}
		l.plan.read <- r
	}()
}

// onHolders handles a reading of the holders.
func (l *loop) onHolders(ctx context.Context, r holdersRead) {
	ps := &l.plan
	ps.reading = false
	switch {
	case r.err == nil:
		ps.owners, ps.ownSeq, ps.replan = r.owners, r.seq, true
	case ctx.Err() == nil:
		l.stop(fmt.Errorf("partition: read the holders of %q: %w", l.a.group, r.err))
	}
}
