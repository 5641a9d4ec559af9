package kube

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leaderkit/elector/backend"
)

// watchSeconds is how long the apiserver keeps one watch of a Lease open;
// the waiter then reads the Lease and watches again.
const watchSeconds = 300

// waiter follows one Lease: its current state, read once and then kept up
// to date by a watch, and when its record (the fields client-go compares)
// was first seen as it is now. A Campaign and a Watch each use one.
type waiter struct {
	b    *Backend
	name string

	obj *coordinationv1.Lease // nil: there is no such Lease
	rv  string                // resourceVersion to watch from
	key specKey
	has bool      // key holds obj's record
	at  time.Time // when the record in key was first seen

	w watch.Interface // nil until wait starts it
}

// observe records obj (nil: absent) as the Lease's current state. A record
// that differs from the previous one restarts the holder's expiry from now:
// the holder sent it no later than now, so the holder's Deadline, counted
// from when it sent the update, ends first (see # Safety).
func (w *waiter) observe(obj *coordinationv1.Lease) {
	w.obj = obj
	if obj == nil {
		w.has = false
		return
	}
	if k := keyOf(obj); !w.has || k != w.key {
		w.key, w.has, w.at = k, true, time.Now()
	}
}

// free reports whether the Lease may be taken at now: absent, naming no
// holder, or past its expiry.
func (w *waiter) free(now time.Time) bool {
	return w.obj == nil || holderOf(w.obj) == "" || !now.Before(w.expiry())
}

// expiry is when the holder's lease expires as a candidate judges it: when
// the record was first seen plus the holder's leaseDurationSeconds.
func (w *waiter) expiry() time.Time { return w.at.Add(durationOf(w.obj)) }

// refresh reads the Lease (a quorum read) and restarts the watch from it.
func (w *waiter) refresh(ctx context.Context) error {
	w.stopWatch()
	obj, rv, err := w.b.list(ctx, w.name)
	if err != nil {
		return fmt.Errorf("reading lease %s/%s: %w", w.b.ns, w.name, err)
	}
	w.observe(obj)
	w.rv = rv
	return nil
}

// wait returns after one change of the Lease (applied to w), at until (the
// zero time: never), when ctx ends (ctx.Err()), or when the Backend is
// closed (an error wrapping [backend.ErrClosed]). A watch that ends is
// replaced after reading the Lease again.
func (w *waiter) wait(ctx context.Context, until time.Time) error {
	if w.w == nil {
		w.b.requests.Add(1)
		wi, err := w.b.leases.Watch(ctx, metav1.ListOptions{
			FieldSelector:   "metadata.name=" + w.name,
			ResourceVersion: w.rv,
			TimeoutSeconds:  new(int64(watchSeconds)),
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("watching lease %s/%s: %w", w.b.ns, w.name, err)
		}
		w.w = wi
	}
	var timeout <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.b.done:
		return backend.ErrClosed
	case <-timeout:
		return nil
	case ev, ok := <-w.w.ResultChan():
		if !ok {
			return w.refresh(ctx)
		}
		return w.apply(ctx, ev)
	}
}

// apply applies one watch event.
func (w *waiter) apply(ctx context.Context, ev watch.Event) error {
	switch ev.Type {
	case watch.Added, watch.Modified:
		if obj, ok := ev.Object.(*coordinationv1.Lease); ok {
			w.observe(obj)
			w.rv = obj.ResourceVersion
		}
	case watch.Deleted:
		w.observe(nil)
		if m, err := meta.Accessor(ev.Object); err == nil {
			w.rv = m.GetResourceVersion()
		}
	case watch.Bookmark:
		if m, err := meta.Accessor(ev.Object); err == nil {
			w.rv = m.GetResourceVersion()
		}
	case watch.Error:
		// Typically 410 Gone: the resourceVersion is too old to watch
		// from. Whatever it is, read the Lease again and watch from there.
		return w.refresh(ctx)
	}
	return nil
}

func (w *waiter) stopWatch() {
	if w.w != nil {
		w.w.Stop()
		w.w = nil
	}
}

func (w *waiter) stop() { w.stopWatch() }

// Watch calls fn with the election's holder (the zero Holder when the Lease
// names none, or has expired), then on every change of holder or token,
// from a watch of the Lease, and with the zero Holder when the holder's
// Lease expires as [Backend.Leader] judges it: on the apiserver's clock,
// or the holder's leaseDurationSeconds after this watch first saw its
// latest record. A holder that crashed is therefore reported gone about
// its duration after its last write, as a key with a TTL is by the other
// drivers, although no write marks it. It returns ctx.Err() when ctx ends, an error wrapping
// [backend.ErrClosed] when the Backend is closed, or the error that ended
// the watch.
func (b *Backend) Watch(ctx context.Context, election string, fn func(backend.Holder)) error {
	name, err := leaseName(election)
	if err != nil {
		return err
	}
	if err := b.usable("watch", election); err != nil {
		return err
	}
	w := &waiter{b: b, name: name}
	defer w.stop()
	sent := time.Now()
	if err := w.refresh(ctx); err != nil {
		return b.watchErr(ctx, election, err)
	}
	v := b.judge(ctx, w.obj) // on the apiserver's clock; see # Readers
	last := w.judged(election, v, sent, time.Now())
	fn(last)
	for {
		var until time.Time // a held Lease's expiry, when fn is to hear of it
		if !last.IsZero() {
			until = w.expiry()
			if v.on(w.obj) && v.exp.Before(until) {
				until = v.exp
			}
		}
		if err := w.wait(ctx, until); err != nil {
			return b.watchErr(ctx, election, err)
		}
		now := time.Now()
		if h := w.judged(election, v, now, now); h.Identity != last.Identity || h.Token != last.Token {
			last = h
			fn(h)
		}
	}
}

// holder reports the Lease as a [backend.Holder] of election at now: the
// zero Holder when it is absent, names no holder, or has expired as a
// waiting candidate judges it (the holder's duration after its record was
// first seen); else the holder, whose TTL is the time left until then.
func (w *waiter) holder(election string, now time.Time) backend.Holder {
	if w.free(now) {
		return backend.Holder{}
	}
	h := holder(election, w.obj)
	h.TTL = w.expiry().Sub(now)
	return h
}

// judged is holder, also judged by v, the verdict of the apiserver's clock
// on the record read by a request sent at sent: the zero Holder when v
// judges the record w holds now and its holder had stopped by then.
func (w *waiter) judged(election string, v verdict, sent, now time.Time) backend.Holder {
	h := w.holder(election, now)
	if h.IsZero() || !v.on(w.obj) {
		return h
	}
	if !sent.Before(v.exp) {
		return backend.Holder{}
	}
	h.TTL = min(h.TTL, max(v.exp.Sub(now), time.Millisecond))
	return h
}

func (b *Backend) watchErr(ctx context.Context, election string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("kube: watch %q: %w", election, err)
}
