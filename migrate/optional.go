package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// A migrating Backend forwards every optional ability of the backends it
// wraps (see # Optional abilities in package backend).
var (
	_ backend.Watcher     = (*Backend)(nil)
	_ backend.BatchReader = (*Backend)(nil)
	_ backend.TTLFloor    = (*Backend)(nil)
	_ backend.Warner      = (*Backend)(nil)
	_ backend.Unwrapper   = (*Backend)(nil)
)

// Unwrap implements [backend.Unwrapper]: the old backend (nil in PhaseDone
// after Cleanup) and the new one, so that [backend.As] reaches their
// drivers' own API.
func (b *Backend) Unwrap() []backend.Backend { return []backend.Backend{b.old, b.new} }

// Leaders implements [backend.BatchReader]: for each election what Leader
// reports, reading each store the phase needs in one batch when that
// store's backend is a [backend.BatchReader], one election at a time
// otherwise.
func (b *Backend) Leaders(ctx context.Context, elections []string) ([]backend.Holder, []error) {
	hs, errs := make([]backend.Holder, len(elections)), make([]error, len(elections))
	var valid []int
	for i, e := range elections {
		if errs[i] = b.check("leader", e); errs[i] == nil {
			valid = append(valid, i)
		}
	}
	names := make([]string, len(valid))
	for k, i := range valid {
		names[k] = elections[i]
	}
	vh, ve := b.leaders(ctx, names)
	for k, i := range valid {
		hs[i], errs[i] = vh[k], ve[k]
	}
	return hs, errs
}

// Watch implements [backend.Watcher]: it reports the holder that Leader
// reports, each time it changes. It watches the store that Leader reads
// (PhaseOld: the old one; PhaseNew and PhaseDone: the new one) and, in
// PhaseBoth, both. A store whose backend is no [backend.Watcher] is read
// every [Options.RenewInterval] instead (every second by default).
func (b *Backend) Watch(ctx context.Context, election string, fn func(backend.Holder)) error {
	if err := b.check("watch", election); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	switch b.phase {
	case PhaseOld:
		err = b.watchSide(ctx, b.old, election, func(h backend.Holder) error {
			if !IsMarker(h) && !h.IsZero() {
				var err error
				if h, err = withEpoch(h, b.oldEpoch()); err != nil {
					return err
				}
			}
			fn(h)
			return nil
		})
	case PhaseBoth:
		err = b.watchBoth(ctx, election, fn)
	default:
		err = b.watchSide(ctx, b.new, election, func(h backend.Holder) error {
			if !h.IsZero() {
				var err error
				if h, err = withEpoch(h, b.newEpoch()); err != nil {
					return err
				}
			}
			fn(h)
			return nil
		})
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// watchBoth is PhaseBoth's Watch: it watches both stores and reports the
// leader as [Backend.Status] finds it, once both have reported.
func (b *Backend) watchBoth(ctx context.Context, election string, fn func(backend.Holder)) error {
	var (
		mu               sync.Mutex // orders the calls to fn
		old, nw          backend.Holder
		haveOld, haveNew bool
		last             backend.Holder
		reported         bool
	)
	update := func(set func()) error {
		mu.Lock()
		defer mu.Unlock()
		set()
		if !haveOld || !haveNew {
			return nil
		}
		l := b.statusOf(old, nil, nw, nil).Leader
		if !reported || l != last {
			reported, last = true, l
			fn(l)
		}
		return nil
	}
	// The first watch to end ends the other; its error is Watch's.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() {
		errs <- b.watchSide(wctx, b.old, election, func(h backend.Holder) error {
			return update(func() { old, haveOld = h, true })
		})
	}()
	go func() {
		errs <- b.watchSide(wctx, b.new, election, func(h backend.Holder) error {
			return update(func() { nw, haveNew = h, true })
		})
	}()
	err := <-errs
	cancel()
	<-errs
	return err
}

// watchSide calls fn with the holder of election on be (the zero Holder
// when there is none) and each time it changes, through be's Watch, or by
// reading it every renew interval when be has none, until ctx ends, the
// watch fails, or fn returns an error; it returns that error.
func (b *Backend) watchSide(ctx context.Context, be backend.Backend, election string, fn func(backend.Holder) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fnErr error // set once; fn is called sequentially, and not after Watch returns
	call := func(h backend.Holder) {
		if fnErr != nil {
			return
		}
		if fnErr = fn(h); fnErr != nil {
			fnErr = fmt.Errorf("migrate: watch %q: %w", election, fnErr)
			cancel()
		}
	}
	var err error
	if w, ok := be.(backend.Watcher); ok {
		err = w.Watch(ctx, election, call)
	} else {
		err = b.pollSide(ctx, be, election, call)
	}
	if fnErr != nil {
		return fnErr
	}
	return err
}

// pollSide reads the holder of election on be every renew interval and
// calls fn when it changes, until ctx ends or a read fails.
func (b *Backend) pollSide(ctx context.Context, be backend.Backend, election string, fn func(backend.Holder)) error {
	every := b.set.renewInterval
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var last backend.Holder
	for first := true; ; first = false {
		h, err := be.Leader(ctx, election)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, backend.ErrNoLeader):
			h = backend.Holder{}
		case err != nil:
			return err
		}
		h.TTL = 0 // a changing TTL is not a change of holder
		if first || h != last {
			last = h
			fn(h)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// MinTTL implements [backend.TTLFloor]: the highest floor of the backends
// the phase campaigns on (PhaseOld: the old one; PhaseBoth and PhaseNew:
// both; PhaseDone: the new one), and which store it comes from. It returns
// an error wrapping [errors.ErrUnsupported] when none of them has a floor.
func (b *Backend) MinTTL(ctx context.Context) (time.Duration, string, error) {
	type side struct {
		name string
		be   backend.Backend
	}
	var sides []side
	if b.phase != PhaseDone {
		sides = append(sides, side{"old store", b.old})
	}
	if b.phase != PhaseOld {
		sides = append(sides, side{"new store", b.new})
	}
	var (
		floor time.Duration
		why   string
		found bool
	)
	for _, s := range sides {
		f, ok := s.be.(backend.TTLFloor)
		if !ok {
			continue
		}
		d, w, err := f.MinTTL(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return 0, "", ctx.Err()
			}
			return 0, "", fmt.Errorf("migrate: TTL floor of the %s: %w", s.name, err)
		}
		if !found || d > floor {
			floor, why, found = d, s.name+": "+w, true
		}
	}
	if !found {
		return 0, "", fmt.Errorf("migrate: %w: no store of phase %v sets a TTL floor", errors.ErrUnsupported, b.phase)
	}
	return floor, why, nil
}
