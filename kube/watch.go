package kube

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/leaderkit/elector/backend"
)

// watchSeconds is how long the apiserver keeps one watch of the
// namespace open; the Backend then watches again from where it was.
const watchSeconds = 300

// waiter follows one Lease on the Backend's watch of its namespace (see
// leaseCache): its current state, and when its record (the fields
// client-go compares) was first seen as it is now. A Campaign and a Watch
// each use one; it sends no request of its own.
type waiter struct {
	b    *Backend
	name string

	obj     *coordinationv1.Lease // nil: there is no such Lease
	at      time.Time             // when obj's record was first seen
	changed <-chan struct{}       // closed at the Lease's next change
}

// free reports whether the Lease may be taken at now: absent, naming no
// holder, or past its expiry.
func (w *waiter) free(now time.Time) bool {
	return w.obj == nil || holderOf(w.obj) == "" || !now.Before(w.expiry())
}

// expiry is when the holder's lease expires as a candidate judges it: when
// the record was first seen plus the holder's leaseDurationSeconds.
func (w *waiter) expiry() time.Time { return w.at.Add(durationOf(w.obj)) }

// expiryBy is expiry, or v's judgment on the apiserver's clock when v is of
// the record w holds and says earlier.
func (w *waiter) expiryBy(v verdict) time.Time {
	exp := w.expiry()
	if v.on(w.obj) && v.exp.Before(exp) {
		exp = v.exp
	}
	return exp
}

// freeBy reports whether the Lease may be taken at now, its expiry judged
// by expiryBy.
func (w *waiter) freeBy(v verdict, now time.Time) bool {
	return w.obj == nil || holderOf(w.obj) == "" || !now.Before(w.expiryBy(v))
}

// refresh starts the Backend's watch unless it runs, waits for its first
// List, and loads the Lease from it.
func (w *waiter) refresh(ctx context.Context) error {
	if err := w.b.startCache().awaitSynced(ctx); err != nil {
		return err
	}
	w.load()
	return nil
}

// load reads the Lease's entry from the Backend's watch.
func (w *waiter) load() {
	e, ok, ch := w.b.cache.get(w.name)
	w.obj, w.at, w.changed = nil, time.Time{}, ch
	if ok {
		w.obj, w.at = e.obj, e.at
	}
}

// wait returns after one change of the Lease (loaded into w), at until
// (the zero time: never), when ctx ends (ctx.Err()), or when the Backend
// is closed (an error wrapping [backend.ErrClosed]).
func (w *waiter) wait(ctx context.Context, until time.Time) error {
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
	case <-w.changed:
		w.load()
		return nil
	}
}

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
			until = w.expiryBy(v)
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
