package kube

import (
	"context"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// followRetry is how long the Backend's watch of its held Leases waits
// before it is started again after it failed within followRetry of its
// start (an unreachable apiserver): renewals fail meanwhile too, and the
// Deadline ends a lease if they keep failing. A watch that ran longer (the
// apiserver ended it after watchSeconds) is started again at once.
const followRetry = 500 * time.Millisecond

// follow watches the Leases of the Backend's namespace, one watch for all
// the leases it holds, from the first lease it wins until Close, and
// finishes a held lease as soon as an event shows its Lease not naming it
// any more: another writer took it over (a client-go candidate, kubectl),
// released it for it, or deleted it. The holder then learns of the loss
// from the apiserver's event, not at its next renewal.
//
// The first watch starts from the resourceVersion of the write that won
// the first lease, and every later one from the last resourceVersion the
// watch delivered (an event's, or a bookmark's in a quiet namespace), so no
// change is missed, and the namespace's Leases, which may be thousands, are
// never read as a whole while the apiserver can still resume the watch.
// When it cannot (the version is compacted away), follow lists the Leases
// and checks every held one against the list before watching from it.
func (b *Backend) follow() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-b.done
		cancel()
	}()
	rv := ""
	for _, l := range b.heldLeases() {
		if rv == "" || rvAfter(rv, l.won) {
			rv = l.won
		}
	}
	for ctx.Err() == nil {
		started := time.Now()
		rv = b.followOnce(ctx, rv)
		if time.Since(started) >= followRetry {
			continue
		}
		t := time.NewTimer(followRetry)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// followOnce watches from resourceVersion rv until the watch ends or ctx
// does, and returns the resourceVersion to resume from. When rv is "" or
// too old to watch from, it first lists the Leases, checks the held ones,
// and watches from the list; it returns "" when the list failed or the
// apiserver refused to resume, so that the next call lists again.
func (b *Backend) followOnce(ctx context.Context, rv string) string {
	if rv == "" {
		var ok bool
		if rv, ok = b.checkHeld(ctx); !ok {
			return ""
		}
	}
	b.requests.Add(1)
	w, err := b.leases.Watch(ctx, metav1.ListOptions{
		ResourceVersion:     rv,
		AllowWatchBookmarks: true,
		TimeoutSeconds:      new(int64(watchSeconds)),
	})
	if err != nil {
		return resumeFrom(rv, err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return resumeFrom(rv, apierrors.FromObject(ev.Object))
		}
		obj, ok := ev.Object.(*coordinationv1.Lease)
		if !ok {
			return rv
		}
		rv = obj.ResourceVersion
		if ev.Type == watch.Bookmark {
			continue
		}
		for _, l := range b.heldNamed(obj.Name) {
			if !rvAfter(obj.ResourceVersion, l.won) {
				continue // a write from before l won it
			}
			if ev.Type == watch.Deleted || !l.o.owns(obj) {
				l.foreign()
			}
		}
	}
	return rv
}

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

// checkHeld lists the Leases, finishes every held lease whose Lease the
// list shows not naming it (or absent), and returns the list's
// resourceVersion; false when the list failed.
func (b *Backend) checkHeld(ctx context.Context) (string, bool) {
	list, err := bounded(b, ctx, func(ctx context.Context) (*coordinationv1.LeaseList, error) {
		return b.leases.List(ctx, metav1.ListOptions{})
	})
	if err != nil {
		return "", false
	}
	present := make(map[string]*coordinationv1.Lease, len(list.Items))
	for i := range list.Items {
		present[list.Items[i].Name] = &list.Items[i]
	}
	for _, l := range b.heldLeases() {
		if obj, ok := present[l.name]; (!ok || !l.o.owns(obj)) && !l.newer(list.ResourceVersion) {
			l.foreign()
		}
	}
	return list.ResourceVersion, true
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
