package partition

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
)

// loop is the one goroutine that decides, for every partition, whether this
// member campaigns, owns or hands over. Blocking work (campaigns, releases)
// runs in goroutines that report back on channels; the leases held run on
// the term engine, which reports a term it ended and a callback returned
// through the inbox. The loop itself never calls the backend or a lease
// method, so a slow store never delays it. Its fields are touched only by
// the loop's goroutine.
type loop struct {
	a       *Assigner
	pl      planner
	view    view // the last member list
	settled bool // a member list has been read twice in a row since joining
	placed  map[int]bool
	plan    planState
	rd      reader
	parts   map[int]*part
	camps   map[int]*camp
	retries map[int]retry
	win     window

	stopping   bool
	stopErr    error
	leave      context.CancelFunc
	memberDone bool
	strays     int // releases of campaigns won after they were given up

	campaigned chan campResult
	released   chan *part
	strayDone  chan struct{}
	in         inbox

	// beforeAssigned, when set (by tests), runs in each OnAssigned's
	// goroutine before it checks the lease's deadline: as a process
	// stopped at that point would.
	beforeAssigned func(p int)
}

func newLoop(a *Assigner) *loop {
	return &loop{
		a:       a,
		pl:      planner{group: a.group, n: a.n, me: a.opts.Identity, poll: a.opts.PollInterval},
		placed:  map[int]bool{},
		parts:   map[int]*part{},
		camps:   map[int]*camp{},
		retries: map[int]retry{},
		win:     newWindow(),

		campaigned: make(chan campResult),
		released:   make(chan *part),
		strayDone:  make(chan struct{}),
		in:         inbox{kick: make(chan struct{}, 1)},
		rd:         newReader(a.b, a.group, a.n, a.opts.Identity),
		plan:       planState{replan: true},
	}
}

// run handles events until it has stopped (ctx ended, or the backend
// failed permanently) and nothing it started is still running.
func (l *loop) run(ctx context.Context, views <-chan view, memberDone <-chan error, leave context.CancelFunc) error {
	l.leave = leave
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	done := ctx.Done()
	for {
		wake := l.reconcile(ctx, time.Now())
		if l.stopping && len(l.parts) == 0 && len(l.camps) == 0 && l.strays == 0 && !l.rd.busy {
			return l.stopErr
		}
		timer.Reset(time.Until(wake))
		select {
		case v := <-views:
			l.onView(ctx, v)
		case r := <-l.campaigned:
			l.onCampaign(ctx, r)
		case <-l.in.kick:
			l.onInbox(ctx)
		case pt := <-l.released:
			delete(l.parts, pt.as.Partition)
		case <-l.strayDone:
			l.strays--
		case r := <-l.rd.read:
			l.rd.busy = false
			l.onHolders(ctx, r)
		case r := <-l.rd.checked:
			l.rd.busy = false
			l.onCheck(ctx, r)
		case r := <-l.rd.lapsed:
			l.rd.busy = false
			l.onLapse(ctx, r)
		case <-timer.C:
		case <-done:
			done = nil
			l.stop(ctx.Err())
		case err := <-memberDone:
			memberDone, l.memberDone = nil, true
			if err != nil && !l.stopping {
				l.stop(err)
			}
		}
		l.drain(ctx)
	}
}

// drain handles the frequent events already waiting, up to a bound, so
// that a burst (a cold start's campaigns, a wave of callbacks returning)
// costs one reconcile rather than one per event.
func (l *loop) drain(ctx context.Context) {
	for range 1024 {
		select {
		case r := <-l.campaigned:
			l.onCampaign(ctx, r)
		case <-l.in.kick:
			l.onInbox(ctx)
		case pt := <-l.released:
			delete(l.parts, pt.as.Partition)
		default:
			return
		}
	}
}

// stop ends every partition with reason err and leaves the member list.
func (l *loop) stop(err error) {
	l.stopping, l.stopErr = true, err
	l.placed = map[int]bool{}
	l.plan.replan = true
	l.leave()
}

// reconcile brings every partition towards its placement: it ends
// ownership of partitions placed elsewhere (the engine ends those past their
// step-down point or lost), releases those whose OnAssigned has returned,
// cancels campaigns no longer wanted, and starts campaigns for placed
// partitions. It returns when it next has something to do.
func (l *loop) reconcile(ctx context.Context, now time.Time) time.Time {
	wake := l.replan(ctx, now)
	for p, pt := range l.parts {
		if pt.reason == nil && !l.placed[p] {
			reason := ErrMoved
			if l.stopping {
				reason = l.stopErr
			}
			l.end(ctx, pt, reason)
		}
		if pt.reason != nil && pt.returned && !pt.releasing {
			l.release(ctx, pt)
		}
	}
	for p, c := range l.camps {
		switch {
		case c.cancelled:
		case l.placed[p]:
			c.keepUntil = time.Time{}
		case l.keeps(c, now):
			wake = earliest(wake, c.keepUntil)
		default:
			c.cancel()
			c.cancelled = true
		}
	}
	for p := range l.placed {
		if len(l.camps) >= maxCampaigns {
			break
		}
		if l.parts[p] != nil || l.camps[p] != nil {
			continue
		}
		if r, ok := l.retries[p]; ok && now.Before(r.at) {
			wake = earliest(wake, r.at)
			continue
		}
		free := !l.plan.elsewhere[p]
		if free && l.win.full() {
			continue // a campaign ending wakes the loop
		}
		l.campaign(ctx, p, free)
	}
	return wake
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// onView takes a new member list; the placement is recomputed from it at
// the next reconcile (see replan).
func (l *loop) onView(ctx context.Context, v view) {
	same := slices.Equal(v.members, l.view.members) && slices.Equal(v.weights, l.view.weights) && v.joined == l.view.joined
	if l.settled && same {
		return
	}
	l.view = v
	if !l.settled {
		// Before the first campaign, wait until two polls in a row read
		// the same member list: members starting together then campaign
		// once for their final share, instead of grabbing what an early,
		// partial list places on them and handing most of it over; and
		// only on lists whose every slot has been read once (a slot
		// never read may hide a member: under load, members settled
		// alone and grabbed every partition). A member joining a group
		// that runs already (its probe found partitions held by others,
		// so it read every holder) need not wait: it places from that
		// reading.
		//
		// Until the first reading is in, a member cannot tell a cold
		// start from a join: a joiner whose reading (n Leader reads)
		// outlasted two polls settled as in a cold start, placed from
		// nothing, waited in the campaigns of partitions nobody handed
		// it, and found the ones handed to it only at its next reading,
		// seconds later.
		if !v.joined || !v.complete || !l.plan.probed || (!same && l.plan.owners == nil) {
			return
		}
	}
	l.settle(ctx)
}

// settle applies the member list in l.view.
func (l *loop) settle(ctx context.Context) {
	first := !l.settled
	l.settled = true
	v := l.view
	l.a.log.LogAttrs(ctx, slog.LevelInfo, "members changed", slog.Any("members", v.members), slog.Any("weights", v.weights), slog.Bool("joined", v.joined))
	l.a.setMembers(v.members)
	ps := &l.plan
	ps.seq++
	ps.replan, ps.changedAt = true, time.Now()
	switch {
	case first && ps.owners == nil:
		// A cold start: the probe found the partitions free, so every
		// member places from nothing and they agree without reading.
		// Reading all n holders now, as every member settles, doubled
		// the requests of a Redlock cold start and made its campaigns
		// time out; a member still short later reads then.
		ps.ownSeq, ps.readAt = ps.seq, time.Now()
	case first:
		// A joiner placing from its first reading: reading again at
		// once would only see the others' hand-overs to it under way.
		ps.ownSeq = ps.seq
	}
}

// hold starts owning partition p under lease ls, won with the given
// Deadline: the term engine runs its lease and OnAssigned.
func (l *loop) hold(ctx context.Context, p int, ls backend.Lease, deadline time.Time) {
	o := &l.a.opts
	as := Assignment{Group: l.a.group, Partition: p, Token: ls.Token()}
	pt := &part{
		as:   as,
		term: elector.Term{Election: Election(l.a.group, p), Identity: o.Identity, Token: as.Token, Start: time.Now()},
	}
	l.parts[p] = pt
	l.plan.replan = true
	if id, ok := l.plan.awaited[p]; ok && !l.isMember(id) {
		l.plan.raceWon = true
	}
	delete(l.retries, p)
	l.a.setOwned(as, true)
	l.a.observe(p, elector.Event{Kind: elector.EventElected, Term: pt.term})
	l.a.log.LogAttrs(ctx, slog.LevelDebug, "assigned", slog.Int("partition", p), slog.Uint64("token", as.Token))
	pt.t = term.Start(l.a.b, ctx, ls, deadline, l.a.timing(), term.Hooks{
		Callback: "OnAssigned",
		Renewed:  func(r term.Renewal) { l.renewed(ctx, pt, r) },
		Ended:    func(reason error) { l.in.post(pt, reason) },
		Returned: func() { l.in.post(pt, nil) },
		Before: func() {
			if l.beforeAssigned != nil {
				l.beforeAssigned(p)
			}
		},
	})
	pt.t.Go(func(actx context.Context) {
		if o.OnAssigned != nil {
			o.OnAssigned(actx, as)
		}
	})
}

// renewed reports a renewal of pt's lease: an event, and a warning for a
// failure that did not lose the lease.
func (l *loop) renewed(ctx context.Context, pt *part, r term.Renewal) {
	l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventRenew, Term: pt.term, Took: r.Took, Err: r.Err})
	if r.Err != nil && !errors.Is(r.Err, backend.ErrLost) {
		l.a.log.LogAttrs(ctx, term.RetryLevel(r.Failures), "renewal failed; retrying", slog.Int("partition", pt.as.Partition),
			slog.Int("failures", r.Failures), slog.Any("error", r.Err), slog.Duration("retry_in", r.RetryIn))
	}
}

// onInbox handles what the engine reported: terms it ended (their lease
// lost or past its step-down point, or OnAssigned not started in time), and
// callbacks returned.
func (l *loop) onInbox(ctx context.Context) {
	for _, ev := range l.in.take() {
		switch pt := ev.pt; {
		case ev.ended != nil:
			if pt.reason == nil {
				l.end(ctx, pt, ev.ended)
			}
		default:
			pt.returned = true
		}
	}
}

// end ends the ownership of pt: its ctx is cancelled now; the lease is
// released once OnAssigned has returned. Until then a partition handed over
// stays renewed, so no new owner can act while OnAssigned still does.
func (l *loop) end(ctx context.Context, pt *part, reason error) {
	pt.reason = pt.t.End(reason)
	l.plan.replan = true
	l.a.setOwned(pt.as, false)
	l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventEnded, Term: pt.term, Err: pt.reason})
	l.a.log.LogAttrs(ctx, slog.LevelDebug, "revoking", slog.Int("partition", pt.as.Partition),
		slog.Uint64("token", pt.as.Token), slog.Any("reason", pt.reason))
}

// release gives pt's lease back, then calls OnRevoked, in the background.
func (l *loop) release(ctx context.Context, pt *part) {
	pt.releasing = true
	o := &l.a.opts
	go func() {
		began := time.Now()
		err := pt.t.Release(ctx)
		l.warnRelease(ctx, err)
		l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventRelease, Term: pt.term, Took: time.Since(began), Err: err})
		l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventRevoked, Term: pt.term, Err: pt.reason})
		if o.OnRevoked != nil && !pt.t.Late() {
			o.OnRevoked(pt.as, pt.reason)
		}
		l.released <- pt
	}()
}

// releaseStray gives back a lease won by a campaign no longer wanted.
func (l *loop) releaseStray(ctx context.Context, ls backend.Lease) {
	l.strays++
	go func() {
		l.warnRelease(ctx, term.Release(ctx, ls, l.a.timing()))
		l.strayDone <- struct{}{}
	}()
}

// warnRelease logs a failed release, except of a lease found already gone.
func (l *loop) warnRelease(ctx context.Context, err error) {
	if err != nil && !errors.Is(err, backend.ErrLost) {
		l.a.log.LogAttrs(ctx, slog.LevelWarn, "release failed; the election stays held until the driver deletes the lease or it lapses", slog.Any("error", err))
	}
}
