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

	// Unmark removes the marker of election and the other keys the old
	// store keeps for it (such as a fencing counter). It succeeds when there
	// is nothing to remove.
	Unmark(ctx context.Context, election string) error
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

// Cleanup is runbook step 4: it removes the marker of election and the old
// store's other keys for it through m (the old backend, for this module's
// drivers), once every replica runs in
// [PhaseNew] or [PhaseDone]. Roll the replicas to PhaseDone before calling
// it, or a PhaseNew replica's next first term writes the marker again.
//
// After Cleanup nothing stops a replica configured for the old backend alone
// from winning there: run it only when no such replica can start again.
func Cleanup(ctx context.Context, m Marker, election string) error {
	if m == nil {
		return fmt.Errorf("migrate: cleanup %q: %w: marker is nil", election, backend.ErrInvalid)
	}
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("migrate: cleanup: %w", err)
	}
	if err := m.Unmark(ctx, election); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("migrate: cleanup %q: %w", election, err)
	}
	return nil
}

// Cleanup is [Cleanup] through b's marker ([Options.Marker], by default
// the old backend): runbook step 4, for a Backend in [PhaseDone] given the
// old backend (as `elect migrate cleanup` opens one). It returns an error
// wrapping [backend.ErrInvalid] in another phase, or when b has no marker.
func (b *Backend) Cleanup(ctx context.Context, election string) error {
	if err := b.check("cleanup", election); err != nil {
		return err
	}
	switch {
	case b.phase != PhaseDone:
		return fmt.Errorf("migrate: cleanup %q in phase %v: %w: want phase done (runbook step 4): roll every replica to phase done first", election, b.phase, backend.ErrInvalid)
	case b.set.marker == nil:
		return fmt.Errorf("migrate: cleanup %q: %w: no marker; want the old backend (one of this module's drivers) or Options.Marker", election, backend.ErrInvalid)
	}
	return Cleanup(ctx, b.set.marker, election)
}
