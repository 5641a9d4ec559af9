package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/leaderkit/elector/backend"
)

// Leader implements [backend.Backend.Leader]. Tokens are reported as the
// fence sees them, with the epoch of their side (# Fencing).
//
//   - PhaseOld reports the old store's holder, which may be the marker.
//   - PhaseBoth reports the leader as [Backend.Status] reads it: the old
//     store's holder while the old store is unmarked, the new store's once
//     it carries the marker, and an error wrapping [backend.ErrNoLeader]
//     when that store has no holder.
//   - PhaseNew and PhaseDone report the new store's holder.
func (b *Backend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if err := b.check("leader", election); err != nil {
		return backend.Holder{}, err
	}
	hs, errs := b.leaders(ctx, []string{election})
	return hs[0], errs[0]
}

// leaders reads the holders of elections, which are valid names, as Leader
// reports them, reading each store b's phase needs in one batch.
func (b *Backend) leaders(ctx context.Context, elections []string) ([]backend.Holder, []error) {
	switch b.phase {
	case PhaseOld:
		hs, errs := readMany(ctx, b.old, elections)
		for i := range hs {
			if errs[i] == nil && !IsMarker(hs[i]) {
				hs[i], errs[i] = withEpoch(hs[i], b.oldEpoch())
			}
		}
		return hs, errs
	case PhaseBoth:
		var oh, nh []backend.Holder
		var oe, ne []error
		var wg sync.WaitGroup
		wg.Go(func() { oh, oe = readMany(ctx, b.old, elections) })
		nh, ne = readMany(ctx, b.new, elections)
		wg.Wait()
		hs, errs := make([]backend.Holder, len(elections)), make([]error, len(elections))
		for i, e := range elections {
			if err := ctx.Err(); err != nil {
				errs[i] = err
				continue
			}
			hs[i], errs[i] = bothLeader(e, b.statusOf(oh[i], oe[i], nh[i], ne[i]))
		}
		return hs, errs
	}
	hs, errs := readMany(ctx, b.new, elections)
	for i := range hs {
		if errs[i] == nil {
			hs[i], errs[i] = withEpoch(hs[i], b.newEpoch())
		}
	}
	return hs, errs
}

// bothLeader is PhaseBoth's Leader of election, given its Status.
func bothLeader(election string, s Status) (backend.Holder, error) {
	if err := s.Err(); err != nil {
		return backend.Holder{}, fmt.Errorf("migrate: election %q: %w", election, err)
	}
	if s.Leader.IsZero() {
		return backend.Holder{}, fmt.Errorf("migrate: election %q: %w (old: %s; new: %s)", election, backend.ErrNoLeader, describe(s.Old, s.OldErr), describe(s.New, s.NewErr))
	}
	return s.Leader, nil
}

// readMany reads the holders of elections on be as [backend.Backend.Leader]
// does: in one call when be is a [backend.BatchReader] and there are
// several, otherwise one at a time.
func readMany(ctx context.Context, be backend.Backend, elections []string) ([]backend.Holder, []error) {
	if br, ok := be.(backend.BatchReader); ok && len(elections) > 1 {
		return br.Leaders(ctx, elections)
	}
	hs, errs := make([]backend.Holder, len(elections)), make([]error, len(elections))
	for i, e := range elections {
		if err := ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		hs[i], errs[i] = be.Leader(ctx, e)
	}
	return hs, errs
}

func describe(h backend.Holder, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%q token %d", h.Identity, h.Token)
}

// withEpoch returns h with its native token encoded in epoch.
func withEpoch(h backend.Holder, epoch uint16) (backend.Holder, error) {
	t, err := Token(epoch, h.Token)
	if err != nil {
		return backend.Holder{}, err
	}
	h.Token = t
	return h, nil
}

// Status is where a migrating election stands, as [Backend.Status] reads
// it from both stores.
type Status struct {
	// Phase is the phase of the Backend that read the status.
	Phase Phase
	// Marked reports whether the old store carries the "migrated" marker:
	// runbook step 3 has begun and [Cleanup] has not run.
	Marked bool
	// HasOld reports whether the Backend has an old backend, whose holder
	// Old and OldErr report; without one (PhaseDone after Cleanup) both are
	// zero.
	HasOld bool
	// Old is the old store's holder with its native token (the marker, when
	// Marked), or the zero Holder; OldErr is the error of reading it, nil
	// when there is no holder.
	Old    backend.Holder
	OldErr error
	// New is the new store's holder with its native token, or the zero
	// Holder; NewErr is the error of reading it, nil when there is no holder.
	New    backend.Holder
	NewErr error
	// Leader is the holder of the election as a fence sees it, token with
	// epoch, whatever mix of adjacent phases the replicas run in:
	//
	//   - in PhaseDone, and in every phase once Marked, the new store's
	//     holder: only the new store orders terms from step 3 on;
	//   - otherwise the old store's holder, which orders every term of
	//     steps 1 and 2, whether it runs on the old store alone or on both.
	//     The new store may name another holder meanwhile: a PhaseBoth
	//     candidate that won the new side first and gives it back within
	//     [Options.RenewInterval], or a leader whose release of the new side
	//     has not landed yet, in which case the old holder, a PhaseBoth
	//     candidate, starts its term as soon as it has.
	//
	// It is the zero Holder when there is none, or when a store it needs
	// could not be read (see [Status.Err]).
	Leader backend.Holder
	// OldCandidate reports, in PhaseDone, that the old store's holder is a
	// candidate rather than the marker: a replica configured for the old
	// store alone leads there (after Cleanup nothing stops one), or the
	// replicas reached step 4 before step 3 was done.
	OldCandidate bool
}

// Err returns the error of reading a store that the Status needed to find
// the leader, or nil: NewErr, and OldErr outside PhaseDone. In PhaseDone
// the old store is read only to report the marker; see [Status.OldErr].
func (s Status) Err() error {
	switch {
	case s.NewErr != nil:
		return fmt.Errorf("new store: %w", s.NewErr)
	case s.OldErr != nil && s.Phase != PhaseDone:
		return fmt.Errorf("old store: %w", s.OldErr)
	}
	return nil
}

// Status reads both stores and reports which phase the election is in and
// who leads, for a status command; see [Status.Leader] for the rule, which
// holds whichever of the runbook's URLs reads it. Errors reading one store
// are reported in the Status; Status itself fails only for an invalid
// election, a closed Backend, or a ctx that ended.
func (b *Backend) Status(ctx context.Context, election string) (Status, error) {
	if err := b.check("status", election); err != nil {
		return Status{}, err
	}
	var oh, nh backend.Holder
	var oe, ne error
	if b.old != nil {
		oh, oe = b.old.Leader(ctx, election)
	}
	nh, ne = b.new.Leader(ctx, election)
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	return b.statusOf(oh, oe, nh, ne), nil
}

// statusOf is the Status of an election whose old store's holder was read
// as old, oldErr (both zero when b has no old backend) and whose new
// store's as new, newErr, errors wrapping [backend.ErrNoLeader] included.
func (b *Backend) statusOf(old backend.Holder, oldErr error, new backend.Holder, newErr error) Status {
	noLeader := func(h backend.Holder, err error) (backend.Holder, error) {
		if errors.Is(err, backend.ErrNoLeader) {
			return backend.Holder{}, nil
		}
		return h, err
	}
	s := Status{Phase: b.phase}
	if b.old != nil {
		s.HasOld = true
		s.Old, s.OldErr = noLeader(old, oldErr)
		s.Marked = IsMarker(s.Old)
	}
	s.New, s.NewErr = noLeader(new, newErr)
	s.OldCandidate = b.phase == PhaseDone && s.OldErr == nil && !s.Old.IsZero() && !s.Marked
	if s.Err() != nil {
		return s
	}
	switch {
	case s.New.IsZero() && (s.Marked || b.phase == PhaseDone):
	case s.Marked || b.phase == PhaseDone:
		s.Leader, _ = withEpoch(s.New, b.newEpoch())
	case !s.Old.IsZero():
		s.Leader, _ = withEpoch(s.Old, b.oldEpoch())
	}
	return s
}
