package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/leaderkit/elector/backend"
)

// Leader implements [backend.Backend.Leader]. Tokens are reported as the
// fence sees them, with the epoch of their side (# Fencing).
//
//   - PhaseOld reports the old store's holder, which may be the marker.
//   - PhaseBoth reports the old store's holder when the new store's has the
//     same identity, the new store's when the old store carries the marker,
//     and an error wrapping [backend.ErrNoLeader] otherwise (one side is
//     free, or a candidate holds the old side while waiting for the new).
//   - PhaseNew and PhaseDone report the new store's holder.
func (b *Backend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if err := b.check("leader", election); err != nil {
		return backend.Holder{}, err
	}
	switch b.phase {
	case PhaseOld:
		h, err := b.old.Leader(ctx, election)
		if err != nil || IsMarker(h) {
			return h, err
		}
		return withEpoch(h, b.oldEpoch())
	case PhaseBoth:
		s, err := b.Status(ctx, election)
		if err != nil {
			return backend.Holder{}, err
		}
		if s.Leader.IsZero() {
			return backend.Holder{}, fmt.Errorf("migrate: election %q: %w (old: %s; new: %s)", election, backend.ErrNoLeader, describe(s.Old, s.OldErr), describe(s.New, s.NewErr))
		}
		return s.Leader, nil
	}
	h, err := b.new.Leader(ctx, election)
	if err != nil {
		return h, err
	}
	return withEpoch(h, b.newEpoch())
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
	// runbook step 3 has begun.
	Marked bool
	// Old is the old store's holder with its native token (the marker, when
	// Marked), or the zero Holder; OldErr is the error of reading it, nil
	// when there is no holder. Both are zero in PhaseDone.
	Old    backend.Holder
	OldErr error
	// New is the new store's holder with its native token, or the zero
	// Holder; NewErr is the error of reading it, nil when there is no holder.
	New    backend.Holder
	NewErr error
	// Leader is the holder of the election as a fence sees it, token with
	// epoch, by the rules of PhaseBoth in [Backend.Leader]: the old holder
	// when both stores name the same identity, the new holder once Marked,
	// else zero.
	Leader backend.Holder
}

// Status reads both stores and reports which phase the election is in and
// who leads on each side, for a status command. Errors reading one store are
// reported in the Status; Status itself fails only for an invalid election,
// a closed Backend, or a ctx that ended.
func (b *Backend) Status(ctx context.Context, election string) (Status, error) {
	if err := b.check("status", election); err != nil {
		return Status{}, err
	}
	s := Status{Phase: b.phase}
	read := func(be backend.Backend) (backend.Holder, error) {
		h, err := be.Leader(ctx, election)
		if errors.Is(err, backend.ErrNoLeader) {
			return backend.Holder{}, nil
		}
		return h, err
	}
	if b.old != nil && b.phase != PhaseDone {
		s.Old, s.OldErr = read(b.old)
		s.Marked = IsMarker(s.Old)
	}
	s.New, s.NewErr = read(b.new)
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	switch {
	case s.Marked && s.NewErr == nil && !s.New.IsZero():
		s.Leader, _ = withEpoch(s.New, b.newEpoch())
	case !s.Marked && s.OldErr == nil && s.NewErr == nil && !s.Old.IsZero() && s.Old.Identity == s.New.Identity:
		s.Leader, _ = withEpoch(s.Old, b.oldEpoch())
	}
	return s, nil
}
