package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leaderkit/elector/backend"
)

// WatchEntries implements [backend.Registry]: one List of the election's
// LeaseCandidates by [ElectionLabel], then one watch from its
// resourceVersion, resumed from the last version seen when the apiserver
// ends it. An entry lapses when Entries would drop it (on the apiserver's
// clock), or its TTL after this watch first saw its last write, whichever
// comes first; a timer, not a request, reports it. It returns ctx.Err()
// when ctx ends, an error wrapping [backend.ErrClosed] when the Backend is
// closed, or the error that ended the watch (the caller lists again).
func (b *Backend) WatchEntries(ctx context.Context, election string, fn func([]backend.Entry)) error {
	name, err := b.open("watch entries", election)
	if err != nil {
		return err
	}
	if b.cands == nil {
		return fmt.Errorf("kube: watch entries %q: %w", election, errNoCandidates)
	}
	fail := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("kube: watch entries %q: %w", election, err)
	}
	list, err := bounded(b, ctx, func(ctx context.Context) (*coordinationv1beta1.LeaseCandidateList, error) {
		return b.cands.List(ctx, selector(name))
	})
	if err != nil {
		return fail(b.candidateErr(ctx, err))
	}
	cw := &candidateWatch{b: b, lease: name, seen: make(map[string]seenCandidate)}
	now := time.Now()
	for i := range list.Items {
		cw.put(&list.Items[i], now)
	}
	cw.report(ctx, fn)
	rv := list.ResourceVersion
	for {
		opts := selector(name)
		opts.ResourceVersion, opts.AllowWatchBookmarks, opts.TimeoutSeconds = rv, true, new(int64(watchSeconds))
		b.requests.Add(1)
		w, err := b.cands.Watch(ctx, opts)
		if err != nil {
			return fail(err)
		}
		rv, err = cw.follow(ctx, w, rv, fn)
		w.Stop()
		if err != nil {
			return fail(err)
		}
	}
}

// candidateWatch is the state of one WatchEntries: the election's
// LeaseCandidates by name, each with when its record was first seen.
type candidateWatch struct {
	b     *Backend
	lease string
	seen  map[string]seenCandidate
	last  []backend.Entry // as last passed to fn
	told  bool            // fn was called
}

type seenCandidate struct {
	c  candidate
	at time.Time
}

// put records obj as seen at now; an object that is not one of the
// driver's entries of the election is dropped.
func (cw *candidateWatch) put(obj *coordinationv1beta1.LeaseCandidate, now time.Time) {
	c, ok := parseCandidate(obj, cw.lease)
	if !ok {
		delete(cw.seen, obj.Name)
		return
	}
	s, ok := cw.seen[obj.Name]
	if !ok || s.c.record != c.record {
		s.at = now
	}
	s.c = c
	cw.seen[obj.Name] = s
}

// live returns the live entries at now and when the first of them lapses
// (the zero time: none).
func (cw *candidateWatch) live(ctx context.Context, now time.Time) ([]backend.Entry, time.Time) {
	s, judged := cw.b.sample(ctx)
	var out []backend.Entry
	var next time.Time
	for _, sc := range cw.seen {
		exp := sc.at.Add(sc.c.ttl)
		if v, ok := sc.c.judge(s, judged, cw.b.cfg.drift); ok && v.Before(exp) {
			exp = v
		}
		if !now.Before(exp) {
			continue
		}
		out = append(out, sc.c.entry)
		if next.IsZero() || exp.Before(next) {
			next = exp
		}
	}
	slices.SortFunc(out, func(a, b backend.Entry) int { return strings.Compare(a.ID, b.ID) })
	return out, next
}

// report calls fn with the live entries unless it heard them last, and
// returns when the first of them lapses (the zero time: none).
func (cw *candidateWatch) report(ctx context.Context, fn func([]backend.Entry)) time.Time {
	live, next := cw.live(ctx, time.Now())
	if !cw.told || !slices.Equal(live, cw.last) {
		cw.told, cw.last = true, live
		fn(slices.Clone(live))
	}
	return next
}

// follow applies the events of w and reports the entries after each, and
// when one lapses, until w ends (it returns the resourceVersion to resume
// from), ctx ends, the Backend is closed, or an error event arrives.
func (cw *candidateWatch) follow(ctx context.Context, w watch.Interface, rv string, fn func([]backend.Entry)) (string, error) {
	for {
		next := cw.report(ctx, fn)
		var lapse <-chan time.Time
		stop := func() bool { return false }
		if !next.IsZero() {
			t := time.NewTimer(time.Until(next))
			lapse, stop = t.C, t.Stop
		}
		ev, ok, err := cw.await(ctx, w, lapse)
		stop()
		switch {
		case err != nil:
			return rv, err
		case !ok:
			return rv, nil
		case ev == nil:
			continue // an entry lapsed
		}
		if ev.Type == watch.Error {
			return rv, apierrors.FromObject(ev.Object)
		}
		obj, isCand := ev.Object.(*coordinationv1beta1.LeaseCandidate)
		if !isCand {
			return rv, fmt.Errorf("%w: got a %T", errNotWatching, ev.Object)
		}
		rv = obj.ResourceVersion
		switch ev.Type {
		case watch.Bookmark:
		case watch.Deleted:
			delete(cw.seen, obj.Name)
		default:
			cw.put(obj, time.Now())
		}
	}
}

// await waits for the next event of w (false: w ended), for lapse (a nil
// event), for ctx to end or for the Backend to close (an error).
func (cw *candidateWatch) await(ctx context.Context, w watch.Interface, lapse <-chan time.Time) (*watch.Event, bool, error) {
	select {
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-cw.b.done:
		return nil, false, backend.ErrClosed
	case <-lapse:
		return nil, true, nil
	case ev, ok := <-w.ResultChan():
		return &ev, ok, nil
	}
}
