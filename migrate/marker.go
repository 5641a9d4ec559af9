package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/leaderkit/elector/backend"
)

// MarkerPrefix starts the identity of the "migrated" marker: the old store
// reports the marker as the holder of the election, with identity
// MarkerPrefix + [Options.NewName] (for example "migrated-to-etcd").
const MarkerPrefix = "migrated-to-"

// IsMarker reports whether h, as an old backend's Leader reports it, is the
// "migrated" marker rather than a candidate.
func IsMarker(h backend.Holder) bool { return strings.HasPrefix(h.Identity, MarkerPrefix) }

// Marker writes the persistent "migrated" marker into the old store, in the
// store's own election format, so that the marker is the election's holder
// for good: a replica that campaigns on the old store alone, whether through
// this package or an unmodified driver, waits behind it forever and cannot
// win. The old backend's Leader then reports the marker as the holder, with
// an identity that starts with [MarkerPrefix].
//
// Every driver of this module implements Marker on its Backend, in its own
// store's format: redlock.Backend (the lock key made persistent),
// etcd.Backend (the candidate key detached from its lease) and
// zookeeper.Backend (a persistent znode that sorts before every
// candidate); [New] uses the old backend as its Marker by default.
type Marker interface {
	// Mark turns held, the lease on election that the caller holds on the
	// old store and that [Backend.Campaign] will not release, into the
	// persistent holder identity (keeping held's token where the store's
	// format allows). Because the caller holds the election while Mark
	// runs, no other candidate of the old store can hold it then or ever
	// after. Mark must wake the store's watchers of held (so waiting
	// candidates and Leader watches see the marker): rewrite held's own
	// record, or delete it once the marker is in place. Marking an election
	// that already carries the marker succeeds.
	Mark(ctx context.Context, election string, held backend.Lease, identity string) error

	// Unmark removes the marker of election from the old store, and
	// nothing else: a candidate's record stays, and so does a fencing
	// counter the store keeps (deleting or lowering one would let a later
	// leader of the old store carry a token a fence has already seen). It
	// reports whether it deleted a marker, or part of one that an
	// interrupted Unmark left, and succeeds with false when there is none.
	Unmark(ctx context.Context, election string) (removed bool, err error)
}

// errMarked is the cause of an old campaign abandoned because the marker
// appeared.
var errMarked = errors.New("migrate: the old store carries the migrated marker")

// refusedError is what PhaseOld returns for a migrated election.
func refusedError(election string, h backend.Holder) error {
	return fmt.Errorf("migrate: campaign %q in phase old (runbook step 1): %w: the old store holds the marker %q, written by runbook step 3; roll this replica to phase new",
		election, backend.ErrInvalid, h.Identity)
}

// marked reads the old store's holder of election and reports whether it is
// the marker.
func marked(ctx context.Context, old backend.Backend, election string) (backend.Holder, bool, error) {
	h, err := old.Leader(ctx, election)
	switch {
	case errors.Is(err, backend.ErrNoLeader):
		return backend.Holder{}, false, nil
	case err != nil:
		return backend.Holder{}, false, err
	}
	return h, IsMarker(h), nil
}

// Cleaned is what [Cleanup] found on the old store and removed.
type Cleaned struct {
	// Marker is the marker the old store reported as the election's holder
	// before Cleanup removed it, with its native token; the zero Holder
	// when the old store reported no holder (an earlier Cleanup stopped
	// part way, and Removed tells whether what it left was removed now).
	Marker backend.Holder
	// Removed reports whether Cleanup deleted marker records.
	Removed bool
}

// leaderReader reads an election's holder: a [backend.Backend], or a
// [Marker] that is one (every driver's Backend).
type leaderReader interface {
	Leader(ctx context.Context, election string) (backend.Holder, error)
}

// Cleanup is runbook step 4: it removes the marker of election from the old
// store through m, the old backend (every driver of this module implements
// [Marker] on its Backend), once every replica runs in [PhaseDone]. Roll
// the replicas to PhaseDone before calling it, or a PhaseNew replica's next
// first term writes the marker again. m must also read the election's
// holder (a Leader method, as every driver's Backend has); use
// [Backend.Cleanup] for a Marker that does not.
//
// Cleanup checks first that the marker is there: when the old store's
// holder is a candidate rather than the marker, runbook step 3 has not
// written it (the election was never migrated, or a replica still leads on
// the old store), and Cleanup changes nothing and returns an error wrapping
// [backend.ErrInvalid] that names step 3. When the old store reports no
// holder, Cleanup removes what an interrupted Cleanup may have left (a
// marker on too few Redis nodes to form a quorum) and, when there was
// nothing, returns an error wrapping [ErrNotMarked]. It never deletes or
// lowers a fencing counter.
//
// After Cleanup nothing stops a replica configured for the old backend alone
// from winning there: run it only when no such replica can start again.
func Cleanup(ctx context.Context, m Marker, election string) (Cleaned, error) {
	if m == nil {
		return Cleaned{}, fmt.Errorf("migrate: cleanup %q: %w: marker is nil", election, backend.ErrInvalid)
	}
	r, ok := m.(leaderReader)
	if !ok {
		return Cleaned{}, fmt.Errorf("migrate: cleanup %q: %w: the marker %T cannot read the old store's holder (it has no Leader method); pass the old backend, or use Backend.Cleanup", election, backend.ErrInvalid, m)
	}
	return cleanup(ctx, r, m, election)
}

// ErrNotMarked is wrapped by the error of [Cleanup] when the old store
// carries no marker of the election, neither whole nor in part: an earlier
// Cleanup removed it, or runbook step 3 never wrote it. It wraps
// [backend.ErrInvalid].
var ErrNotMarked = fmt.Errorf("%w: the old store carries no migrated marker", backend.ErrInvalid)

// cleanup reads the old store's holder through old and removes the marker
// through m; see [Cleanup].
func cleanup(ctx context.Context, old leaderReader, m Marker, election string) (Cleaned, error) {
	if err := backend.ValidateElection(election); err != nil {
		return Cleaned{}, fmt.Errorf("migrate: cleanup: %w", err)
	}
	h, err := old.Leader(ctx, election)
	switch {
	case errors.Is(err, backend.ErrNoLeader):
		h = backend.Holder{}
	case err != nil:
		if ctx.Err() != nil {
			return Cleaned{}, ctx.Err()
		}
		return Cleaned{}, fmt.Errorf("migrate: cleanup %q: read the old store's holder: %w", election, err)
	case !IsMarker(h):
		return Cleaned{}, fmt.Errorf("migrate: cleanup %q: %w: the old store's holder is %q (token %d), a candidate, not the migrated marker: runbook step 3 has not written the marker (the election was never migrated, or a replica still leads on the old store); nothing was removed",
			election, backend.ErrInvalid, h.Identity, h.Token)
	}
	removed, err := m.Unmark(ctx, election)
	c := Cleaned{Marker: h, Removed: removed}
	switch {
	case err != nil && ctx.Err() != nil:
		return c, ctx.Err()
	case err != nil:
		return c, fmt.Errorf("migrate: cleanup %q: %w", election, err)
	case h.IsZero() && !removed:
		return c, fmt.Errorf("migrate: cleanup %q: %w: nothing to remove (an earlier cleanup removed it, or runbook step 3 never wrote it)", election, ErrNotMarked)
	}
	return c, nil
}

// Cleanup is [Cleanup] for a Backend in [PhaseDone] given the old backend
// (as `elect migrate cleanup` opens one): it reads the holder through the
// old backend and removes the marker through b's marker
// ([Options.Marker], by default the old backend). It returns an error
// wrapping [backend.ErrInvalid] in another phase, or when b has no old
// backend or no marker.
func (b *Backend) Cleanup(ctx context.Context, election string) (Cleaned, error) {
	if err := b.check("cleanup", election); err != nil {
		return Cleaned{}, err
	}
	switch {
	case b.phase != PhaseDone:
		return Cleaned{}, fmt.Errorf("migrate: cleanup %q in phase %v: %w: want phase done (runbook step 4): roll every replica to phase done first", election, b.phase, backend.ErrInvalid)
	case b.old == nil:
		return Cleaned{}, fmt.Errorf("migrate: cleanup %q: %w: no old backend; want the old backend's URL or Backend to remove the marker from", election, backend.ErrInvalid)
	case b.set.marker == nil:
		return Cleaned{}, fmt.Errorf("migrate: cleanup %q: %w: no marker; want the old backend (one of this module's drivers) or Options.Marker", election, backend.ErrInvalid)
	}
	return cleanup(ctx, b.old, b.set.marker, election)
}
