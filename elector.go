package elector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
	"github.com/leaderkit/elector/internal/wait"
)

// Elector campaigns for one election on one backend and runs
// [Options.OnElected] while it leads. Create it with [New], then call
// [Elector.Run]. All methods are safe for concurrent use.
type Elector struct {
	b        backend.Backend
	election string
	opts     Options // resolved
	log      *slog.Logger

	running  atomic.Bool
	resignCh chan *resignRequest // received by Run's goroutine during a term
	obsMu    sync.Mutex          // serialises Observer calls

	mu      sync.Mutex
	term    *termState // the current or ending term; nil between terms
	failing streak     // campaign attempts failing in a row

	// prefs runs the preferred-leader rules during Run when Options.Priority
	// is set; nil otherwise. Used by Run's goroutine only.
	prefs *prefs

	// beforeElected, when set (by tests), runs in OnElected's goroutine
	// before it checks the lease's deadline: as a process stopped at that
	// point would.
	beforeElected func()
}

// termState is a term as the Elector tracks it.
type termState struct {
	term  Term
	lease backend.Lease
	ended chan struct{} // closed when the term has ended (its ctx is cancelled)
	// endedAt is when the term ended; zero while it lasts. Guarded by
	// Elector.mu.
	endedAt time.Time
}

type resignRequest struct {
	ts    *termState
	reply chan error // buffered; receives the release's outcome
}

// termKey marks the ctx passed to OnElected, so that Resign called with it
// does not wait for OnElected to return.
type termKey struct{}

// New returns an Elector for election on b. It validates the election name
// (see [ValidateElection]) and the options, and returns an error
// naming the first problem. It does not contact the backend.
func New(b backend.Backend, election string, opts *Options) (*Elector, error) {
	if err := validateNew(b, election); err != nil {
		return nil, err
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if _, ok := b.(backend.Registry); o.Priority != 0 && !ok {
		return nil, fmt.Errorf("elector: Options.Priority is %d but the backend %T keeps no registry of candidates (it is not a backend.Registry); use Priority 0 on it", o.Priority, b)
	}
	return &Elector{
		b:        b,
		election: election,
		opts:     o,
		log:      o.Logger.With("election", election, "identity", o.Identity),
		resignCh: make(chan *resignRequest),
	}, nil
}

// Identity returns the identity this Elector campaigns with: the one in its
// Options, or the generated default.
func (e *Elector) Identity() string { return e.opts.Identity }

// Election returns the name of the election this Elector campaigns for.
func (e *Elector) Election() string { return e.election }

// Options returns the options this Elector runs with, defaults resolved: the
// effective Identity, TTL, RenewInterval, SafetyMargin and Logger, and the
// callbacks as given. Changing the returned value changes nothing.
func (e *Elector) Options() Options { return e.opts }

// Run campaigns for the election and, each time it wins, runs a term:
// OnElected in its own goroutine, the lease renewed every RenewInterval,
// until the term ends (the lease is lost or cannot be renewed in time,
// [Elector.Resign] is called, or ctx ends). Then it waits for OnElected to
// return, releases the lease, calls OnRevoked, and campaigns again. Terms of
// one Elector never overlap.
//
// Transient backend errors are retried with jittered exponential backoff,
// capped at RenewInterval. Run returns only when ctx ends, with ctx.Err()
// unwrapped, after ending any term and releasing its lease with a fresh
// context bounded by max(RenewInterval, 1s) (a lease won once ctx has ended
// starts no term: it is released); or when the backend fails
// permanently (it was closed, or refuses the election as invalid), with an
// error wrapping [backend.ErrClosed] or [backend.ErrInvalid]. No goroutine
// it started outlives it. Only one Run may be active at a time; another
// returns [ErrRunning].
func (e *Elector) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer e.running.Store(false)
	defer e.attemptsForgotten()
	if e.opts.OnLeaderChange != nil {
		defer e.startWatch(ctx)()
	}
	if e.opts.Priority != 0 {
		e.prefs = e.startPrefs(ctx)
		defer func() {
			e.prefs.close(ctx)
			e.prefs = nil
		}()
	}
	for {
		l, won, err := e.campaign(ctx)
		if err != nil {
			return err
		}
		token := l.Token()
		resigned := e.lead(ctx, l, won)
		if err := ctx.Err(); err != nil {
			return err
		}
		if resigned {
			e.awaitSuccessor(ctx, token)
		}
	}
}

// startWatch starts reporting leader changes to OnLeaderChange until ctx
// ends, and returns the function that stops it and waits for it.
func (e *Elector) startWatch(ctx context.Context) (stop func()) {
	octx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { e.watchLeader(octx) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// campaign campaigns until it wins, ctx ends, or the backend fails
// permanently. It returns the lease and its Deadline when won.
func (e *Elector) campaign(ctx context.Context) (backend.Lease, time.Time, error) {
	c := backend.Candidate{Election: e.election, Identity: e.opts.Identity, TTL: e.opts.TTL}
	for attempt := 0; ; attempt++ {
		e.log.LogAttrs(ctx, slog.LevelDebug, "campaigning", slog.Int("attempt", attempt))
		began := time.Now()
		e.attemptBegins(began)
		l, err := e.campaignOnce(ctx, c)
		if errors.Is(err, errStandAside) {
			attempt = -1 // not a failure: stand aside, then campaign at once
			continue
		}
		e.observe(Event{Kind: EventCampaign, Took: time.Since(began), Err: err})
		if err == nil && ctx.Err() != nil {
			// Won as Run's ctx ended: no term starts after that. Give the
			// lease back; Run returns below.
			e.release(ctx, l, Term{})
			err = ctx.Err()
		}
		if err == nil {
			won := l.Deadline()
			if !e.timing().PastStepDown(won) {
				e.attemptWon(ctx)
				return l, won, nil
			}
			// Won too late to act safely (the campaign itself took most
			// of the TTL): give it back and try again.
			e.release(ctx, l, Term{})
			err = fmt.Errorf("won with only %v left before the lease deadline, within the safety margin %v", time.Until(won), e.opts.SafetyMargin)
		}
		if ctx.Err() != nil {
			e.attemptEnded()
			return nil, time.Time{}, ctx.Err()
		}
		if backend.IsPermanent(err) {
			e.attemptEnded()
			return nil, time.Time{}, fmt.Errorf("elector: campaign %q: %w", e.election, err)
		}
		delay := term.Backoff(attempt, e.opts.RenewInterval)
		e.attemptFailed(ctx, err, delay)
		if !wait.Sleep(ctx, delay) {
			return nil, time.Time{}, ctx.Err()
		}
	}
}

// campaignOnce makes one campaign attempt. With a priority it first waits
// for its turn (see prefs.turn), and the attempt ends with errStandAside
// when a candidate of a higher priority appears before it wins.
func (e *Elector) campaignOnce(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	p := e.prefs
	if p == nil {
		return e.b.Campaign(ctx, c)
	}
	if err := p.turn(ctx); err != nil {
		return nil, err
	}
	cctx, done := p.campaignCtx(ctx)
	l, err := e.b.Campaign(cctx, c)
	if done() && err != nil && ctx.Err() == nil {
		return nil, errStandAside
	}
	return l, err
}

// awaitSuccessor keeps a resigned elector out of the race until a lease
// other than the resigned one holds the election, or for at most
// RenewInterval: long enough for any waiting candidate to win (they are
// woken by the release), short enough that electors resigning in quick
// succession, each waiting for another, do not leave the election empty for
// long. It polls Leader at 2 ms, 4 ms, 8 ms …: a few cheap reads that see a
// successor within milliseconds. (A Watcher may report a short term late or
// not at all: Redlock's polls every 100 ms while nobody leads.)
func (e *Elector) awaitSuccessor(ctx context.Context, token uint64) {
	wctx, cancel := context.WithTimeout(ctx, e.opts.RenewInterval)
	defer cancel()
	for poll := 2 * time.Millisecond; ; poll = min(2*poll, max(e.opts.RenewInterval/8, 2*time.Millisecond)) {
		if h, err := e.b.Leader(wctx, e.election); err == nil && !h.IsZero() && h.Token != token {
			return
		}
		if !wait.Sleep(wctx, poll) {
			return
		}
	}
}

// release gives l back with a fresh context bounded by
// max(RenewInterval, 1s), even when ctx has ended, and returns the outcome.
// A failure is a warning, except a lease found already gone (an error
// wrapping backend.ErrLost, as etcd and ZooKeeper return after a loss) or
// finished by the Backend's Close (backend.ErrClosed).
func (e *Elector) release(ctx context.Context, l backend.Lease, t Term) error {
	began := time.Now()
	err := term.Release(ctx, l, e.timing())
	e.observe(Event{Kind: EventRelease, Term: t, Took: time.Since(began), Err: err})
	if err != nil && (errors.Is(err, backend.ErrLost) || errors.Is(err, backend.ErrClosed)) {
		// Gone already (the term ended on its loss, which was the warning),
		// or finished by Close, which frees it or lets it lapse as its
		// driver documents: nothing failed here.
		e.log.LogAttrs(ctx, slog.LevelDebug, "release: the lease was already gone, or its Backend closed",
			slog.Uint64("token", l.Token()), slog.Any("error", err))
		return fmt.Errorf("elector: release %q: %w", e.election, err)
	}
	if err != nil {
		e.log.LogAttrs(ctx, slog.LevelWarn, "release failed; the election stays held until the driver deletes the lease or it lapses",
			slog.Uint64("token", l.Token()), slog.Any("error", err))
		return fmt.Errorf("elector: release %q: %w", e.election, err)
	}
	return nil
}

// Resign ends the current term and hands the election over: the term's ctx
// is cancelled, and once OnElected has returned the lease is released, so a
// waiting candidate is elected at once. This elector then stays out of the
// race until another candidate has been elected, or for at most
// RenewInterval if none is, and campaigns again after that.
//
// Resign waits until the lease is released and returns the release's error,
// if any (the term has ended either way; an unreleased lease lapses after its
// TTL). Called from OnElected with its ctx, or a ctx derived from it, Resign
// returns as soon as the term has ended, without waiting for OnElected to
// return. It returns [ErrNotLeader] if this elector does not lead, and
// ctx.Err() if ctx ends first.
func (e *Elector) Resign(ctx context.Context) error {
	e.mu.Lock()
	ts := e.term
	e.mu.Unlock()
	if ts == nil {
		return ErrNotLeader
	}
	req := &resignRequest{ts: ts, reply: make(chan error, 1)}
	select {
	case e.resignCh <- req:
	case <-ts.ended:
		return ErrNotLeader
	case <-ctx.Done():
		return ctx.Err()
	}
	if ctx.Value(termKey{}) == ts {
		<-ts.ended
		return nil
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// IsLeader reports whether this elector leads: a term has started and not
// yet ended.
func (e *Elector) IsLeader() bool {
	_, ok := e.Term()
	return ok
}

// Term returns the current term and true while this elector leads, or the
// zero Term and false.
func (e *Elector) Term() (Term, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil || !e.term.endedAt.IsZero() {
		return Term{}, false
	}
	return e.term.term, true
}

// Leader reports the current holder of the election as the backend sees it,
// whichever elector or process holds it, or an error wrapping [ErrNoLeader].
func (e *Elector) Leader(ctx context.Context) (Holder, error) {
	h, err := e.b.Leader(ctx, e.election)
	if err != nil {
		if ctx.Err() != nil {
			return h, ctx.Err()
		}
		return h, fmt.Errorf("elector: leader of %q: %w", e.election, err)
	}
	return h, nil
}

// Check reports the elector's health, for a liveness probe: an error when
// it believes it leads although the lease's deadline has passed (the term
// loop is stuck), when OnElected has not returned within TTL after its
// term ended (the leader's work ignores its ctx), or when every campaign
// attempt has failed for longer than TTL (the backend cannot be reached or
// refuses; the error says for how long, and the last error). It returns nil
// otherwise, including while a campaign waits behind another leader and
// when Run is not running.
func (e *Elector) Check() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := e.term
	switch {
	case ts == nil:
		return e.checkCampaign(time.Now())
	case ts.endedAt.IsZero():
		if late := time.Since(ts.lease.Deadline()); late > 0 {
			return fmt.Errorf("elector: %v: still leading %v past the lease deadline; the term loop is stuck", ts.term, late)
		}
	default:
		if late := time.Since(ts.endedAt); late > e.opts.TTL {
			return fmt.Errorf("elector: %v: OnElected has not returned %v after its term ended; it must return once its ctx is done", ts.term, late.Round(time.Millisecond))
		}
	}
	return nil
}

// observe reports ev to the Observer, if any, one call at a time: renewals
// are reported from the goroutine that ran them, the rest from Run's.
func (e *Elector) observe(ev Event) {
	if e.opts.Observer != nil {
		ev.Election = e.election
		e.obsMu.Lock()
		defer e.obsMu.Unlock()
		e.opts.Observer(ev)
	}
}

// watchLeader reports leader changes to OnLeaderChange until ctx ends.
func (e *Elector) watchLeader(ctx context.Context) {
	var (
		last  Holder
		first = true
	)
	report := func(h Holder) {
		h.TTL = 0 // a changing TTL is not a change of leader
		if first || h != last {
			first, last = false, h
			e.opts.OnLeaderChange(h)
		}
	}
	if w, ok := e.b.(backend.Watcher); ok {
		var warned time.Time
		for attempt := 0; ; attempt++ {
			err := w.Watch(ctx, e.election, report)
			if ctx.Err() != nil || backend.IsPermanent(err) {
				return
			}
			level := slog.LevelDebug
			if time.Since(warned) >= e.warnEvery() {
				level, warned = slog.LevelWarn, time.Now()
			}
			e.log.LogAttrs(ctx, level, "watch failed; retrying", slog.Any("error", err))
			if !wait.Sleep(ctx, term.Backoff(attempt, e.opts.RenewInterval)) {
				return
			}
		}
	}
	t := time.NewTicker(e.opts.RenewInterval)
	defer t.Stop()
	for {
		h, err := e.b.Leader(ctx, e.election)
		switch {
		case err == nil:
			report(h)
		case backend.IsPermanent(err):
			return
		case ctx.Err() == nil && isNoLeader(err):
			report(Holder{})
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}
