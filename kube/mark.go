package kube

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leaderkit/elector/backend"
)

// markerPrefix starts the identity of a "migrated" marker (package
// github.com/leaderkit/elector/migrate, MarkerPrefix).
const markerPrefix = "migrated-to-"

// markerSeconds is the leaseDurationSeconds of a marker record: the largest
// the field holds (about 68 years), so that no candidate, elector's or
// client-go's, counts the marker expired.
const markerSeconds = math.MaxInt32

// isMarker reports whether the Lease carries a "migrated" marker: a holder
// whose identity starts with markerPrefix, without the annotation of an
// elector lease.
func isMarker(l *coordinationv1.Lease) bool {
	_, annotated := l.Annotations[HolderAnnotation]
	return strings.HasPrefix(holderOf(l), markerPrefix) && !annotated
}

// Mark writes the persistent "migrated" marker of package
// github.com/leaderkit/elector/migrate (it implements migrate.Marker, for
// migrations away from Kubernetes Leases): held, the caller's lease on
// election from this Backend, is turned into a holder record naming
// identity for the largest leaseDurationSeconds (about 68 years), with
// leaseTransitions kept, so the marker's token is held's. The update is
// conditional on the resourceVersion of a Lease that still names held;
// every candidate, client-go's LeaderElector among them, waits behind the
// marker, and Leader reports identity as the holder. held ends (its Lost
// closes): the Lease no longer names it. identity starts with
// "migrated-to-". Marking an election that carries the marker succeeds.
func (b *Backend) Mark(ctx context.Context, election string, held backend.Lease, identity string) error {
	name, err := leaseName(election)
	if err != nil {
		return fmt.Errorf("kube: mark: %w", err)
	}
	if !strings.HasPrefix(identity, markerPrefix) {
		return fmt.Errorf("kube: mark %q: %w: identity %q; want one starting with %q", election, backend.ErrInvalid, identity, markerPrefix)
	}
	l, ok := held.(*lease)
	if !ok || l.b != b || l.election != election {
		return fmt.Errorf("kube: mark %q: %w: held (%T) is not a lease of this Backend on the election", election, backend.ErrInvalid, held)
	}
	if err := b.usable("mark", election); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !time.Now().Before(l.Deadline()) {
		return fmt.Errorf("kube: mark %q: %w: the lease's deadline has passed", election, backend.ErrLost)
	}
	cur := l.obj
	for range maxConflicts {
		if cur == nil {
			if cur, err = b.get(ctx, name); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("kube: mark %q: lease %s/%s was deleted: %w", election, b.ns, name, backend.ErrLost)
				}
				return fmt.Errorf("kube: mark %q: %w", election, err)
			}
		}
		if isMarker(cur) {
			l.lose()
			return nil
		}
		if !l.o.owns(cur) {
			return fmt.Errorf("kube: mark %q: lease %s/%s is held by %q (leaseTransitions %d): %w",
				election, b.ns, name, holderOf(cur), transitionsOf(cur), backend.ErrLost)
		}
		next := cur.DeepCopy()
		markerRecord(identity).writeTo(next)
		_, err := b.update(ctx, next)
		switch {
		case err == nil:
			l.lose()
			return nil
		case apierrors.IsConflict(err):
			cur = nil
		case apierrors.IsNotFound(err):
			return fmt.Errorf("kube: mark %q: lease %s/%s was deleted: %w", election, b.ns, name, backend.ErrLost)
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			return fmt.Errorf("kube: mark %q: %w", election, permanent(err))
		}
	}
	return fmt.Errorf("kube: mark %q: lease %s/%s: %d conflicting updates in a row", election, b.ns, name, maxConflicts)
}

// Unmark removes the "migrated" marker of election written by
// [Backend.Mark] (it implements migrate.Marker; migrate.Cleanup calls it)
// by writing the released record, as a release does, conditional on the
// resourceVersion read; it leaves a candidate's record alone. The Lease is
// kept, and with it leaseTransitions, the fencing counter: deleting it would
// let the next leader carry a token a fence has already seen. Unmark
// reports whether it removed a marker.
func (b *Backend) Unmark(ctx context.Context, election string) (bool, error) {
	name, err := b.open("unmark", election)
	if err != nil {
		return false, err
	}
	for range maxConflicts {
		cur, err := b.get(ctx, name)
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("kube: unmark %q: %w", election, err)
		case !isMarker(cur):
			return false, nil
		}
		next := cur.DeepCopy()
		releasedRecord().writeTo(next)
		_, err = b.update(ctx, next)
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case !apierrors.IsConflict(err):
			return false, fmt.Errorf("kube: unmark %q: %w", election, permanent(err))
		}
	}
	return false, fmt.Errorf("kube: unmark %q: lease %s/%s: %d conflicting updates in a row", election, b.ns, name, maxConflicts)
}
