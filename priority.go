package elector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
	"github.com/leaderkit/elector/internal/wait"
)

// Entry is one candidate of an election as [Elector.Candidates] lists it:
// its Identity, Priority, whether it stands Aside for a higher one, and the
// ID the backend's registry gives it. It is the same type as the driver
// contract's.
type Entry = backend.Entry

// prefs runs the preferred-leader rules of one Run of an Elector with a
// priority: it keeps the candidate's entry in the backend's registry and a
// view of the election (the live entries and whether anyone leads), from
// which it decides when to stand aside and when a leader yields. See the
// package documentation's "Preferred leaders" section.
type prefs struct {
	e   *Elector
	reg backend.Registry
	c   backend.Candidate

	wmu sync.Mutex // serialises writes of the entry (register, aside, withdraw)

	mu        sync.Mutex
	entry     backend.Registration // nil while not registered
	aside     bool                 // the entry's aside flag as last written
	entries   []backend.Entry      // the live entries, as last read or watched
	freeSince time.Time            // since when the election is seen without a leader; zero while held or unknown
	failed    map[string]bool      // entries deferred to that did not win within the bound
	changed   chan struct{}        // closed and replaced when the view changes

	stop func() // ends the goroutines
}

// bound is how long a candidate defers to a higher one that does not win,
// and how long a yielding leader waits for lower candidates to stand aside.
func (p *prefs) bound() time.Duration { return p.e.opts.TTL }

// startPrefs starts keeping the entry and the view until ctx ends or the
// returned prefs is closed.
func (e *Elector) startPrefs(ctx context.Context) *prefs {
	p := &prefs{
		e:       e,
		reg:     e.b.(backend.Registry),
		c:       backend.Candidate{Election: e.election, Identity: e.opts.Identity, TTL: e.opts.TTL, Priority: e.opts.Priority},
		failed:  make(map[string]bool),
		changed: make(chan struct{}),
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { p.watchEntries(wctx) })
	wg.Go(func() { p.watchFree(wctx) })
	wg.Go(func() { p.refresh(wctx) })
	p.stop = func() { cancel(); wg.Wait() }
	return p
}

// close stops the goroutines and withdraws the entry, with a fresh context
// bounded as a release is.
func (p *prefs) close(ctx context.Context) {
	p.stop()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	r := p.entry
	p.entry = nil
	p.mu.Unlock()
	if r == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(p.e.opts.RenewInterval, time.Second))
	defer cancel()
	if err := r.Withdraw(rctx); err != nil && !errors.Is(err, backend.ErrLost) {
		p.e.log.LogAttrs(ctx, slog.LevelDebug, "withdrawing the candidate entry failed; it lapses with the store's session or TTL", slog.Any("error", err))
	}
}

// changedLocked wakes the waiters on the view. p.mu is held.
func (p *prefs) changedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// setEntries records the live entries and forgets the failure marks of the
// entries gone.
func (p *prefs) setEntries(list []backend.Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries = append(p.entries[:0:0], list...)
	for id := range p.failed {
		if !hasEntry(list, id) {
			delete(p.failed, id)
		}
	}
	p.changedLocked()
}

func hasEntry(list []backend.Entry, id string) bool {
	for _, en := range list {
		if en.ID == id {
			return true
		}
	}
	return false
}

// watchEntries keeps the view's entries current until ctx ends.
func (p *prefs) watchEntries(ctx context.Context) {
	for attempt := 0; ; attempt++ {
		err := p.reg.WatchEntries(ctx, p.c.Election, p.setEntries)
		if ctx.Err() != nil || backend.IsPermanent(err) {
			return
		}
		p.e.log.LogAttrs(ctx, slog.LevelDebug, "watching the candidates failed; retrying", slog.Any("error", err))
		if !wait.Sleep(ctx, term.Backoff(attempt, p.e.opts.RenewInterval)) {
			return
		}
	}
}

// watchFree keeps the view's freeSince current until ctx ends: through the
// backend's Watcher when it has one, by polling Leader otherwise.
func (p *prefs) watchFree(ctx context.Context) {
	if w, ok := p.e.b.(backend.Watcher); ok {
		for attempt := 0; ; attempt++ {
			err := w.Watch(ctx, p.c.Election, p.setHolder)
			if ctx.Err() != nil || backend.IsPermanent(err) {
				return
			}
			if !wait.Sleep(ctx, term.Backoff(attempt, p.e.opts.RenewInterval)) {
				return
			}
		}
	}
	every := max(p.e.opts.TTL/10, 10*time.Millisecond)
	for {
		h, err := p.e.b.Leader(ctx, p.c.Election)
		switch {
		case err == nil:
			p.setHolder(h)
		case backend.IsPermanent(err):
			return
		case ctx.Err() == nil && isNoLeader(err):
			p.setHolder(Holder{})
		}
		if !wait.Sleep(ctx, every) {
			return
		}
	}
}

// setHolder records whether anyone holds the election.
func (p *prefs) setHolder(h Holder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !h.IsZero():
		p.freeSince = time.Time{}
	case p.freeSince.IsZero():
		p.freeSince = time.Now()
	default:
		return
	}
	p.changedLocked()
}

// refresh keeps the entry alive, registering it again when the store lost
// it, every RenewInterval until ctx ends.
func (p *prefs) refresh(ctx context.Context) {
	t := time.NewTicker(p.e.opts.RenewInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		p.mu.Lock()
		r, aside := p.entry, p.aside
		p.mu.Unlock()
		if r == nil {
			continue // registered by the next campaign
		}
		err := r.Refresh(ctx)
		if errors.Is(err, backend.ErrLost) {
			err = p.write(ctx, aside)
		}
		if err != nil && ctx.Err() == nil {
			p.e.log.LogAttrs(ctx, slog.LevelDebug, "refreshing the candidate entry failed", slog.Any("error", err))
		}
	}
}

// write registers the entry, or sets its aside flag, registering it again
// if the store lost it.
func (p *prefs) write(ctx context.Context, aside bool) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	r := p.entry
	p.mu.Unlock()
	var err error
	if r != nil {
		err = r.SetAside(ctx, aside)
		if errors.Is(err, backend.ErrLost) {
			r = nil
		}
	}
	if r == nil {
		r, err = p.reg.Register(ctx, p.c, aside)
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.entry, p.aside = r, aside
	p.mu.Unlock()
	return nil
}

// resigned marks the entry aside before a resigning leader releases its
// lease, so that the candidates below it, which defer to its entry, are
// free to campaign for its succession. A failure only delays them: they
// defer to it for at most the bound.
func (p *prefs) resigned(ctx context.Context) {
	if err := p.write(ctx, true); err != nil && ctx.Err() == nil {
		p.e.log.LogAttrs(ctx, slog.LevelDebug, "marking the candidate entry aside failed", slog.Any("error", err))
	}
}

// higherLocked returns the live entries of a higher priority than this
// candidate's that it defers to: those not marked failed, nor aside (one
// aside defers to a higher one still, which is in the list, or resigned). It first marks
// failed the higher entries deferred to while the election has been without
// a leader for the bound. p.mu is held.
func (p *prefs) higherLocked(now time.Time) []backend.Entry {
	return p.higherInLocked(now, p.entries)
}

// higherInLocked is higherLocked over the entries of list. p.mu is held.
func (p *prefs) higherInLocked(now time.Time, list []backend.Entry) []backend.Entry {
	var own string
	if p.entry != nil {
		own = p.entry.ID()
	}
	mark := !p.freeSince.IsZero() && now.Sub(p.freeSince) >= p.bound()
	var out []backend.Entry
	for _, en := range list {
		if en.ID == own || en.Priority <= p.c.Priority || en.Aside || p.failed[en.ID] {
			continue
		}
		if mark {
			p.failed[en.ID] = true
			p.e.log.Debug("a candidate of a higher priority did not win within the bound; no longer deferred to",
				slog.String("identity", en.Identity), slog.String("id", en.ID), slog.Int("priority", en.Priority))
			continue
		}
		out = append(out, en)
	}
	return out
}

// turn waits until it is this candidate's turn to campaign: until no live
// candidate of a higher priority is deferred to. It keeps the entry's aside
// flag true while it waits and false when it returns nil, having read the
// registry after writing it, so that a leader that saw this candidate
// aside after a higher one registered never finds it queued.
func (p *prefs) turn(ctx context.Context) error {
	for {
		p.mu.Lock()
		now := time.Now()
		higher := p.higherLocked(now)
		changed, free, aside, registered := p.changed, p.freeSince, p.aside, p.entry != nil
		p.mu.Unlock()
		if len(higher) == 0 {
			if !registered || aside {
				if err := p.write(ctx, false); err != nil {
					return err
				}
			}
			// The read decides, but does not replace the watched view: it
			// may have begun before the view's last update, which the
			// watch would not deliver again.
			list, err := p.reg.Entries(ctx, p.c.Election)
			if err != nil {
				return err
			}
			p.mu.Lock()
			now := time.Now()
			higher = p.higherInLocked(now, list)
			viewed := len(p.higherLocked(now)) > 0
			changed = p.changed
			p.mu.Unlock()
			if len(higher) == 0 {
				p.e.log.Debug("no candidate of a higher priority to defer to; campaigning", slog.Int("entries", len(list)))
				return nil
			}
			// A higher entry the view has not yet: wait for the view to
			// catch up, and read again after RenewInterval at most.
			if !viewed && !waitChange(ctx.Done(), changed, now.Add(p.e.opts.RenewInterval)) {
				return ctx.Err()
			}
			continue
		}
		if !aside || !registered {
			if err := p.write(ctx, true); err != nil && ctx.Err() == nil {
				p.e.log.LogAttrs(ctx, slog.LevelDebug, "marking the candidate entry aside failed", slog.Any("error", err))
			}
		}
		p.e.log.LogAttrs(ctx, slog.LevelDebug, "standing aside for a candidate of a higher priority",
			slog.String("identity", higher[0].Identity), slog.Int("priority", higher[0].Priority))
		var at time.Time
		if !free.IsZero() {
			at = free.Add(p.bound())
		}
		if !waitChange(ctx.Done(), changed, at) {
			return ctx.Err()
		}
	}
}

// waitChange waits until changed is closed or the instant at passes (never,
// when at is zero), and reports true; or until stop is closed, and reports
// false.
func waitChange(stop <-chan struct{}, changed <-chan struct{}, at time.Time) bool {
	var timeout <-chan time.Time
	if !at.IsZero() {
		tm := time.NewTimer(time.Until(at))
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case <-changed:
	case <-timeout:
	case <-stop:
		return false
	}
	return true
}

// campaignCtx returns a ctx for one campaign, cancelled when a candidate of
// a higher priority appears, and the function to call once the campaign
// has returned: it reports whether the campaign was cancelled so.
func (p *prefs) campaignCtx(ctx context.Context) (context.Context, func() bool) {
	cctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			p.mu.Lock()
			higher := p.higherLocked(time.Now())
			changed := p.changed
			p.mu.Unlock()
			if len(higher) > 0 {
				p.e.log.Debug("a candidate of a higher priority appeared; leaving the campaign",
					slog.String("identity", higher[0].Identity), slog.Int("priority", higher[0].Priority))
				cancel(errStandAside)
				return
			}
			select {
			case <-changed:
			case <-done:
				return
			}
		}
	})
	return cctx, func() bool {
		close(done)
		wg.Wait()
		deferred := errors.Is(context.Cause(cctx), errStandAside)
		cancel(nil)
		return deferred
	}
}

// errStandAside cancels a campaign when a candidate of a higher priority
// appears.
var errStandAside = errors.New("a candidate of a higher priority is live")

// yieldWhen returns a channel closed when the leader of a term that started
// at start should yield: a live candidate of a higher priority is deferred
// to, the term has lasted MinTerm, and every other candidate of a priority
// below the highest stands aside (or the bound has passed since the higher
// candidate was first seen). It also returns the function that stops the
// wait.
func (p *prefs) yieldWhen(start time.Time) (<-chan struct{}, func()) {
	yield, done := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var seen time.Time // when a higher candidate was first seen
		for {
			p.mu.Lock()
			now := time.Now()
			higher := p.higherLocked(now)
			ready, at := p.readyLocked(now, start, higher, &seen)
			changed := p.changed
			p.mu.Unlock()
			if ready {
				close(yield)
				return
			}
			if !waitChange(done, changed, at) {
				return
			}
		}
	})
	return yield, func() { close(done); wg.Wait() }
}

// readyLocked decides a yield (see yieldWhen): whether to yield now, or
// else when to decide again (zero: on the next change). p.mu is held.
func (p *prefs) readyLocked(now, start time.Time, higher []backend.Entry, seen *time.Time) (bool, time.Time) {
	if len(higher) == 0 {
		*seen = time.Time{}
		return false, time.Time{}
	}
	if seen.IsZero() {
		*seen = now
	}
	if min := start.Add(p.e.opts.MinTerm); now.Before(min) {
		return false, min
	}
	top := higher[0].Priority
	for _, en := range higher {
		top = max(top, en.Priority)
	}
	var own string
	if p.entry != nil {
		own = p.entry.ID()
	}
	for _, en := range p.entries {
		if en.ID != own && !en.Aside && en.Priority < top && !p.failed[en.ID] {
			if at := seen.Add(p.bound()); now.Before(at) {
				return false, at // a lower candidate may be queued still
			}
		}
	}
	return true, time.Time{}
}

// Candidates lists the live candidates of the election that registered a
// priority ([Options.Priority]), from the backend's registry, in no
// particular order. Candidates without a priority, and peers that are not
// electors, are not listed. It returns an error when the backend keeps no
// registry (it is not a [backend.Registry]).
func (e *Elector) Candidates(ctx context.Context) ([]Entry, error) {
	r, ok := e.b.(backend.Registry)
	if !ok {
		return nil, fmt.Errorf("elector: candidates of %q: the backend %T keeps no registry of candidates (it is not a backend.Registry)", e.election, e.b)
	}
	list, err := r.Entries(ctx, e.election)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("elector: candidates of %q: %w", e.election, err)
	}
	return list, nil
}
