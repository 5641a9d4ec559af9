package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
)

// maxCampaigns bounds the campaigns one member has in flight. A member
// campaigns only for partitions placed on it, at most its quota; up to this
// bound they all wait at once, so that each is taken the moment its old
// owner lets it go, and the backend sees one wave of requests per change.
const maxCampaigns = 256

// part is a partition this member owns, or owned and is handing over.
type part struct {
	as     Assignment
	term   elector.Term
	lease  backend.Lease
	cancel context.CancelFunc // cancels OnAssigned's ctx

	deadline time.Time // the lease's Deadline, as last read off the loop
	reason   error     // why ownership ended; nil while it lasts
	returned bool      // OnAssigned has returned
	// late: OnAssigned was not called, its lease's step-down point having
	// passed before it could start (see hold); nor is OnRevoked.
	late      bool
	releasing bool // the release (then OnRevoked) is under way
	renewing  bool // a renewal is in flight
	nextRenew time.Time
	failed    int // consecutive failed renewals
}

// camp is a campaign in flight.
type camp struct {
	cancel    context.CancelFunc
	cancelled bool
	free      bool // counted in the window: no other member was known to hold the partition
	// behind is the departed member whose lease the campaign waits out,
	// "" for none; keepUntil, while the partition is placed on another
	// member, when the campaign is cancelled after all (see keeps).
	behind    string
	keepUntil time.Time
}

type campResult struct {
	p        int
	lease    backend.Lease
	deadline time.Time // the lease's Deadline when it was won
	err      error
	took     time.Duration
}

type renewResult struct {
	pt       *part
	err      error
	took     time.Duration
	deadline time.Time // the lease's Deadline after the attempt
}

type retry struct {
	at      time.Time
	attempt int
}

// loop is the one goroutine that decides, for every partition, whether this
// member campaigns, owns, renews or hands over. Blocking work (campaigns,
// renewals, releases, callbacks) runs in goroutines that report back on
// channels; the loop itself never calls the backend or a lease method other
// than Lost (a driver may hold a lease's lock during a renewal, even for
// Deadline), so a slow store never delays a step-down. Its fields are
// touched only by the loop's goroutine.
type loop struct {
	a       *Assigner
	view    view // the last member list
	settled bool // a member list has been read twice in a row since joining
	placed  map[int]bool
	plan    planState
	parts   map[int]*part
	camps   map[int]*camp
	retries map[int]retry
	win     window

	stopping   bool
	stopErr    error
	leave      context.CancelFunc
	memberDone bool
	strays     int // releases of campaigns won after they were given up
	renewing   int // renewals in flight
	dirty      bool

	campaigned chan campResult
	returned   chan *part
	released   chan *part
	renewed    chan renewResult
	strayDone  chan struct{}
	lost       *lostWatcher

	// beforeAssigned, when set (by tests), runs in each OnAssigned's
	// goroutine before it checks the lease's deadline: as a process
	// stopped at that point would.
	beforeAssigned func(p int)
}

func newLoop(a *Assigner) *loop {
	return &loop{
		a:       a,
		placed:  map[int]bool{},
		parts:   map[int]*part{},
		camps:   map[int]*camp{},
		retries: map[int]retry{},
		win:     newWindow(),

		campaigned: make(chan campResult),
		returned:   make(chan *part),
		released:   make(chan *part),
		renewed:    make(chan renewResult),
		strayDone:  make(chan struct{}),
		lost:       newLostWatcher(),
		plan:       planState{read: make(chan holdersRead), checked: make(chan partsRead), lapsed: make(chan partsRead), replan: true},
	}
}

// run handles events until it has stopped (ctx ended, or the backend
// failed permanently) and nothing it started is still running.
func (l *loop) run(ctx context.Context, views <-chan view, memberDone <-chan error, leave context.CancelFunc) error {
	l.leave = leave
	go l.lost.run()
	defer l.lost.stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	done := ctx.Done()
	for {
		wake := l.reconcile(ctx, time.Now())
		if l.stopping && len(l.parts) == 0 && len(l.camps) == 0 && l.strays == 0 && l.renewing == 0 && !l.plan.reading && !l.plan.checking && !l.plan.lapseBusy {
			return l.stopErr
		}
		if l.dirty {
			l.dirty = false
			l.lost.update(l.parts)
		}
		timer.Reset(time.Until(wake))
		select {
		case v := <-views:
			l.onView(ctx, v)
		case r := <-l.campaigned:
			l.onCampaign(ctx, r)
		case pt := <-l.returned:
			l.onReturned(ctx, pt)
		case pt := <-l.released:
			delete(l.parts, pt.as.Partition)
		case r := <-l.renewed:
			l.onRenew(ctx, r)
		case pt := <-l.lost.ch:
			if pt.reason == nil {
				l.end(ctx, pt, fmt.Errorf("%w: %w", elector.ErrLeaseLost, backend.ErrLost))
			}
		case <-l.strayDone:
			l.strays--
		case r := <-l.plan.read:
			l.onHolders(ctx, r)
		case r := <-l.plan.checked:
			l.onCheck(ctx, r)
		case r := <-l.plan.lapsed:
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
// that a burst (a cold start's campaigns, a batch of renewals) costs one
// reconcile rather than one per event.
func (l *loop) drain(ctx context.Context) {
	for range 1024 {
		select {
		case r := <-l.campaigned:
			l.onCampaign(ctx, r)
		case r := <-l.renewed:
			l.onRenew(ctx, r)
		case pt := <-l.returned:
			l.onReturned(ctx, pt)
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
// ownership of partitions placed elsewhere or past their step-down point,
// releases those whose OnAssigned has returned, cancels campaigns no longer
// wanted, starts campaigns for placed partitions, and renews leases that are
// due. It returns when it next has something to do.
func (l *loop) reconcile(ctx context.Context, now time.Time) time.Time {
	o := &l.a.opts
	wake := l.replan(ctx, now)
	var due []*part
	renewNow := false
	for p, pt := range l.parts {
		if pt.reason == nil {
			stepDown := pt.deadline.Add(-o.SafetyMargin)
			switch {
			case !l.placed[p]:
				reason := ErrMoved
				if l.stopping {
					reason = l.stopErr
				}
				l.end(ctx, pt, reason)
			case !now.Before(stepDown):
				l.end(ctx, pt, fmt.Errorf("%w: %w", elector.ErrLeaseLost, errNoRenewal))
			default:
				wake = earliest(wake, stepDown)
			}
		}
		if pt.reason != nil && pt.returned && !pt.releasing {
			l.release(ctx, pt)
		}
		// A partition handed over stays renewed until OnAssigned returns,
		// so no new owner can act while it still does.
		if !pt.renewing && !pt.releasing && (pt.reason == nil || !errors.Is(pt.reason, elector.ErrLeaseLost)) {
			if now.Add(o.RenewInterval / 4).After(pt.nextRenew) {
				due = append(due, pt) // due, or due soon: renewed together
				renewNow = renewNow || !now.Before(pt.nextRenew)
			} else {
				wake = earliest(wake, pt.nextRenew)
			}
		}
	}
	if renewNow {
		l.renew(ctx, due)
	} else {
		for _, pt := range due {
			wake = earliest(wake, pt.nextRenew)
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

// campaign starts a campaign for partition p; free tells whether it counts
// in the window.
func (l *loop) campaign(ctx context.Context, p int, free bool) {
	cctx, cancel := context.WithCancel(ctx)
	behind := ""
	if id, ok := l.plan.awaited[p]; ok && !l.isMember(id) {
		behind = id
	}
	l.camps[p] = &camp{cancel: cancel, free: free, behind: behind}
	if free {
		l.win.active++
	}
	c := backend.Candidate{Election: Election(l.a.group, p), Identity: l.a.opts.Identity, TTL: l.a.opts.TTL}
	l.a.log.LogAttrs(ctx, slog.LevelDebug, "campaigning", slog.Int("partition", p), slog.Bool("free", free))
	go func() {
		began := time.Now()
		ls, err := l.a.b.Campaign(cctx, c)
		r := campResult{p: p, lease: ls, err: err, took: time.Since(began)}
		if err == nil {
			r.deadline = ls.Deadline()
		}
		l.campaigned <- r
	}()
}

// keeps reports whether campaign c, for a partition no longer placed on
// this member, goes on: a campaign waiting out a departed member's lease
// is kept until that lease must have ended (a TTL and a poll after the
// partition was first placed elsewhere), unless this member stops or is
// out of the member list. The member the partition is now placed on may
// not campaign for it: its own view of the member list can place it on
// yet another, or it is still joining; without the kept campaign nobody
// would take the partition when the lease lapses, until some member short
// of its quota read it free (takeovers 0.2 s over TTL + 1 s on etcd in the
// partition chaos, amid a join and two leaves). When both campaign, the
// first in line wins and, if the placement says so, hands it over: an
// extra move, never an orphan.
func (l *loop) keeps(c *camp, now time.Time) bool {
	if c.behind == "" || l.stopping || !l.view.joined || l.isMember(c.behind) {
		return false
	}
	if c.keepUntil.IsZero() {
		c.keepUntil = now.Add(l.a.opts.TTL + l.a.opts.PollInterval)
	}
	return now.Before(c.keepUntil)
}

// onCampaign handles a campaign's outcome.
func (l *loop) onCampaign(ctx context.Context, r campResult) {
	c := l.camps[r.p]
	delete(l.camps, r.p)
	c.cancel()
	if c.free {
		l.win.active--
	}
	if !c.cancelled {
		l.a.observe(r.p, elector.Event{Kind: elector.EventCampaign, Took: r.took, Err: r.err})
	}
	o := &l.a.opts
	now := time.Now()
	if r.err == nil && !c.cancelled && !l.placed[r.p] && !c.keepUntil.IsZero() {
		// A kept campaign won: hold the partition, and place again with
		// it counted as held. The placement is sticky: this member keeps
		// it within its quota, and hands it over like any other beyond.
		l.a.log.LogAttrs(ctx, slog.LevelDebug, "won a partition placed on another member, behind a departed member",
			slog.Int("partition", r.p), slog.String("departed", c.behind))
		l.placed[r.p] = true
		l.plan.replan = true
	}
	switch {
	case r.err == nil && (c.cancelled || !l.placed[r.p]):
		l.releaseStray(ctx, r.lease)
	case r.err == nil && r.deadline.Sub(now) <= o.SafetyMargin:
		l.releaseStray(ctx, r.lease) // won too late to act safely
		l.win.Shrink(now.Add(-r.took), now)
		l.backoff(r.p)
	case r.err == nil:
		l.win.Grow()
		l.hold(ctx, r.p, r.lease, r.deadline)
	case c.cancelled:
	case backend.IsPermanent(r.err):
		l.stop(fmt.Errorf("partition: campaign %q: %w", Election(l.a.group, r.p), r.err))
	default:
		l.a.log.LogAttrs(ctx, slog.LevelWarn, "campaign failed; retrying",
			slog.Int("partition", r.p), slog.Int("window", l.win.Size()), slog.Any("error", r.err))
		l.win.Shrink(now.Add(-r.took), now)
		l.backoff(r.p)
	}
}

// backoff schedules partition p's next campaign after a jittered,
// exponentially growing delay capped at RenewInterval.
func (l *loop) backoff(p int) {
	r := l.retries[p]
	ceil := l.a.opts.RenewInterval
	if r.attempt < 20 {
		ceil = min(ceil, 25*time.Millisecond<<r.attempt)
	}
	r.attempt++
	r.at = time.Now().Add(max(time.Millisecond, rand.N(ceil+1)))
	l.retries[p] = r
}

// hold starts owning partition p under lease ls.
func (l *loop) hold(ctx context.Context, p int, ls backend.Lease, deadline time.Time) {
	o := &l.a.opts
	as := Assignment{Group: l.a.group, Partition: p, Token: ls.Token()}
	actx, cancel := context.WithCancel(ctx)
	pt := &part{
		as:        as,
		term:      elector.Term{Election: Election(l.a.group, p), Identity: o.Identity, Token: as.Token, Start: time.Now()},
		lease:     ls,
		deadline:  deadline,
		cancel:    cancel,
		nextRenew: time.Now().Add(o.RenewInterval),
	}
	l.parts[p] = pt
	l.dirty = true
	l.plan.replan = true
	if id, ok := l.plan.awaited[p]; ok && !l.isMember(id) {
		l.plan.raceWon = true
	}
	delete(l.retries, p)
	l.a.setOwned(as, true)
	l.a.observe(p, elector.Event{Kind: elector.EventElected, Term: pt.term})
	l.a.log.LogAttrs(ctx, slog.LevelDebug, "assigned", slog.Int("partition", p), slog.Uint64("token", as.Token))
	go func() {
		if l.beforeAssigned != nil {
			l.beforeAssigned(p)
		}
		// The process may have stopped between the win and now (SIGSTOP, a
		// paused VM, a long GC pause) for longer than the lease lasts:
		// OnAssigned would then start while another member may own the
		// partition. In the partition chaos on ZooKeeper a member paused
		// for 3.5 s just after it won a partition started OnAssigned 2 ms
		// after it resumed, its session long expired and the partition
		// owned by another member since 1.5 s (the fence refused its
		// write). Checked here, as close to the call as the library gets,
		// the window is the moment between this check and OnAssigned's
		// first action; the fencing token covers that.
		switch {
		case time.Until(deadline) <= o.SafetyMargin: // as won: Deadline may wait behind a renewal
			pt.late = true
		case o.OnAssigned != nil:
			o.OnAssigned(actx, as)
		}
		l.returned <- pt
	}()
}

// onReturned handles the return of pt's OnAssigned. One never called, its
// lease's step-down point having passed, ends the ownership at once.
func (l *loop) onReturned(ctx context.Context, pt *part) {
	pt.returned = true
	if pt.late && pt.reason == nil {
		l.end(ctx, pt, fmt.Errorf("%w: the lease's step-down point passed before OnAssigned could start", elector.ErrLeaseLost))
	}
}

// end ends the ownership of pt: its ctx is cancelled now; the lease is
// released once OnAssigned has returned.
func (l *loop) end(ctx context.Context, pt *part, reason error) {
	pt.reason = reason
	pt.cancel()
	l.dirty = true
	l.plan.replan = true
	l.a.setOwned(pt.as, false)
	l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventEnded, Term: pt.term, Err: reason})
	l.a.log.LogAttrs(ctx, slog.LevelDebug, "revoking", slog.Int("partition", pt.as.Partition),
		slog.Uint64("token", pt.as.Token), slog.Any("reason", reason))
}

// release gives pt's lease back, then calls OnRevoked, in the background.
func (l *loop) release(ctx context.Context, pt *part) {
	pt.releasing = true
	o := &l.a.opts
	go func() {
		began := time.Now()
		err := l.releaseLease(ctx, pt.lease)
		l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventRelease, Term: pt.term, Took: time.Since(began), Err: err})
		l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventRevoked, Term: pt.term, Err: pt.reason})
		if o.OnRevoked != nil && !pt.late {
			o.OnRevoked(pt.as, pt.reason)
		}
		l.released <- pt
	}()
}

// releaseStray gives back a lease won by a campaign no longer wanted.
func (l *loop) releaseStray(ctx context.Context, ls backend.Lease) {
	l.strays++
	go func() {
		_ = l.releaseLease(ctx, ls)
		l.strayDone <- struct{}{}
	}()
}

// releaseLease releases ls with a fresh context bounded by
// max(RenewInterval, 1s), even when ctx has ended.
func (l *loop) releaseLease(ctx context.Context, ls backend.Lease) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(l.a.opts.RenewInterval, time.Second))
	defer cancel()
	err := ls.Release(rctx)
	if err != nil && !errors.Is(err, backend.ErrLost) {
		l.a.log.LogAttrs(ctx, slog.LevelWarn, "release failed; the election stays held until the driver deletes the lease or it lapses", slog.Any("error", err))
	}
	return err
}
