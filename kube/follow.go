package kube

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resumeFrom returns the resourceVersion to resume watching from after a
// watch from rv failed with err: rv, unless the apiserver cannot serve a
// watch from it (410 Gone: compacted away; or not yet reached), in which
// case "": list again.
func resumeFrom(rv string, err error) string {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return ""
	}
	return rv
}

// heldLeases returns the leases the Backend holds now.
func (b *Backend) heldLeases() []*lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*lease
	for _, ls := range b.held {
		out = append(out, ls...)
	}
	return out
}

// heldNamed returns the leases the Backend holds now on the Lease name:
// the watch's events are looked up by name, each at the cost of the
// leases of its own Lease rather than of every held one.
func (b *Backend) heldNamed(name string) []*lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.held[name])
}

// newer reports whether l was won after the list at resourceVersion rv was
// read (its own write is not in the list): only the watch can judge it.
func (l *lease) newer(rv string) bool { return rvAfter(l.won, rv) }

// rvAfter reports whether resourceVersion a is after b. resourceVersions
// are opaque, but the apiserver over etcd issues them as increasing
// integers; one that does not parse counts as not after.
func rvAfter(a, b string) bool {
	var x, y uint64
	if _, err := fmt.Sscan(a, &x); err != nil {
		return false
	}
	if _, err := fmt.Sscan(b, &y); err != nil {
		return false
	}
	return x > y
}

// foreign ends l after the watch showed another writer's change: Lost
// closes at once, even while a renewal holds l.mu, and the renewal after it
// returns an error wrapping [backend.ErrLost].
func (l *lease) foreign() {
	if l.ended.Load() {
		return // released or marked by its holder, or already lost
	}
	l.finish()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gone = true
	l.b.forget(l)
}
