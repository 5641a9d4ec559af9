package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// A reader (Leader, Leaders, Watch) judges a holder's expiry on the
// apiserver's clock as well as by how long it has watched the record: the
// apiserver stamps every write of a Lease in metadata.managedFields[].time
// and every answer with a Date header, both from its own clock, so a
// process that reads a Lease once can tell how long ago it was last
// written without trusting the holder's clock (renewTime). The derivation
// is in docs/design/kube.md; the constants below are its margins.
const (
	// stampGrain is the resolution of managedFields times and of the Date
	// header: both are whole seconds, rounded down.
	stampGrain = time.Second
	// serverSkew is how far apart the clocks of the apiservers (and of a
	// proxy that writes the Date header) may be, or how far one may step,
	// during one lease.
	serverSkew = time.Second
	// clockMaxAge is how long a sample of the apiserver's clock is reused
	// before it is taken again.
	clockMaxAge = 10 * time.Second
	// clockRetry is how long after a sample could not be taken the next
	// attempt waits; until then the last sample serves (see clockStale).
	clockRetry = time.Second
	// clockStale is the age up to which the last sample serves while a new
	// one cannot be taken. Its drift allowance grows with its age (see
	// expiryAt); a step of the apiserver's clock since it was taken is
	// bounded by serverSkew, as for any sample.
	clockStale = time.Minute
)

// lastWrite returns the latest time the apiserver stamped on l (the
// greatest managedFields time, or its creationTimestamp if later), on the
// apiserver's clock in whole seconds, and false when l carries no
// managedFields time (they were cleared): then no write time is known.
//
// Every write that changes a field of a Lease stamps the time of its
// field manager with the apiserver's current time, whatever times the
// writer sent; so the greatest stamp is no earlier than the holder's last
// write. A writer can only push it later, which makes the holder look
// live for longer.
func lastWrite(l *coordinationv1.Lease) (time.Time, bool) { return lastStamp(&l.ObjectMeta) }

// lastStamp is lastWrite for the metadata of any object.
func lastStamp(m *metav1.ObjectMeta) (time.Time, bool) { return lastStampBut(m, nil) }

// lastStampBut is lastStamp without the managedFields entries skip
// reports (nil: none).
func lastStampBut(m *metav1.ObjectMeta, skip func(metav1.ManagedFieldsEntry) bool) (time.Time, bool) {
	var last time.Time
	for _, f := range m.ManagedFields {
		if f.Time != nil && f.Time.After(last) && (skip == nil || !skip(f)) {
			last = f.Time.Time
		}
	}
	if last.IsZero() {
		return time.Time{}, false
	}
	if c := m.CreationTimestamp.Time; c.After(last) {
		last = c
	}
	return last, true
}

// clockSample relates this process's clock to the apiserver's: at the
// local time at (a monotonic reading), the apiserver's clock read at
// least server. (The Date header of an answer is written before the answer
// arrives, and rounded down.)
type clockSample struct {
	server, at time.Time
}

// expiry returns the local time from which the holder of l, as read, has
// stopped acting for certain, judged on the apiserver's clock: its last
// write plus the resolution of the stamp, plus its leaseDurationSeconds
// and serverSkew, carried over to this process's clock with an allowance
// of drift for the two clocks' rates. false: l carries no write time.
func (s clockSample) expiry(l *coordinationv1.Lease, drift float64) (time.Time, bool) {
	w, ok := lastWrite(l)
	if !ok {
		return time.Time{}, false
	}
	return s.expiryAt(w, durationOf(l), drift), true
}

// expiryAt is expiry for a writer that stops within d of its last write,
// stamped w on the apiserver's clock.
func (s clockSample) expiryAt(w time.Time, d time.Duration, drift float64) time.Time {
	end := w.Add(stampGrain + d + serverSkew) // on the apiserver's clock
	span := end.Sub(s.server)
	return s.at.Add(span + time.Duration(drift*float64(span.Abs())))
}

// serverClock samples the apiserver's clock from the Date header of GET
// /version, sent through the client's own HTTP client (its credentials and
// connections) and rate limiter, and keeps the sample for clockMaxAge.
type serverClock struct {
	http    *http.Client
	url     string
	limiter flowcontrol.RateLimiter
	// fetch takes one sample (take, through http); nil: the client does
	// not expose an HTTP client, and no samples are taken.
	fetch func(context.Context) (clockSample, error)
	taken atomic.Int64 // samples asked of the apiserver (each one request)

	mu       sync.Mutex
	last     clockSample
	has      bool
	failed   time.Time     // when the last attempt failed: none again for clockRetry
	inflight chan struct{} // non-nil while a sample is being taken; closed after
}

// newServerClock returns the clock of the apiserver client talks to; it
// takes no samples when client does not expose its *rest.RESTClient.
func newServerClock(client any) *serverClock {
	r, ok := restOf(client).(*rest.RESTClient)
	if !ok {
		return &serverClock{}
	}
	hc := r.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &serverClock{http: hc, url: r.Get().AbsPath("/version").URL().String(), limiter: r.GetRateLimiter()}
	c.fetch = c.take
	return c
}

// sample returns a sample of the apiserver's clock no older than
// clockMaxAge, taking one if needed. When one cannot be taken (no answer,
// no Date header), the last sample serves while it is younger than
// clockStale, and the next attempt waits clockRetry, so that one slow
// answer does not leave every reader without a judgment; false when there
// is no such sample, or the client does not expose an HTTP client.
func (b *Backend) sample(ctx context.Context) (clockSample, bool) {
	c := b.clock
	if c.fetch == nil {
		return clockSample{}, false
	}
	for {
		c.mu.Lock()
		s, failed, inflight := c.last, c.failed, c.inflight
		switch {
		case c.has && time.Since(s.at) < clockMaxAge:
			c.mu.Unlock()
			return s, true
		case !failed.IsZero() && time.Since(failed) < clockRetry:
			// A reader of many Leases does not ask again for each.
			ok := c.servesLocked()
			c.mu.Unlock()
			return s, ok
		case inflight != nil:
			// One sample at a time: readers that start together (every
			// waiter after an apiserver restart) share it rather than
			// fill the client's rate limit ahead of renewals.
			c.mu.Unlock()
			select {
			case <-inflight:
				continue
			case <-ctx.Done():
				return clockSample{}, false
			}
		}
		done := make(chan struct{})
		c.inflight = done
		c.mu.Unlock()
		c.taken.Add(1)
		s, err := bounded(b, ctx, c.fetch)
		c.mu.Lock()
		c.inflight = nil
		close(done)
		defer c.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				c.failed = time.Now()
			}
			return c.last, c.servesLocked()
		}
		c.last, c.has, c.failed = s, true, time.Time{}
		return s, true
	}
}

// servesLocked reports whether the last sample may still serve.
func (c *serverClock) servesLocked() bool { return c.has && time.Since(c.last.at) < clockStale }

// take takes one sample.
func (c *serverClock) take(ctx context.Context) (clockSample, error) {
	if c.limiter != nil {
		if err := c.limiter.Wait(ctx); err != nil {
			return clockSample{}, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return clockSample{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return clockSample{}, err
	}
	at := time.Now()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return clockSample{}, fmt.Errorf("GET /version answered %s without a valid Date header", resp.Status)
	}
	return clockSample{server: d, at: at}, nil
}

// verdict is the expiry, on this process's clock, of the holder of one
// record of a Lease, judged on the apiserver's clock (see clockSample).
type verdict struct {
	key specKey
	exp time.Time
	ok  bool // false: no judgment (no write time, or no clock sample)
}

// judge returns the verdict on the record of l (nil: none), reading the
// apiserver's clock if needed.
func (b *Backend) judge(ctx context.Context, l *coordinationv1.Lease) verdict {
	if l == nil || holderOf(l) == "" {
		return verdict{}
	}
	if _, ok := lastWrite(l); !ok {
		return verdict{}
	}
	s, ok := b.sample(ctx)
	if !ok {
		return verdict{}
	}
	exp, _ := s.expiry(l, b.cfg.drift)
	return verdict{key: keyOf(l), exp: exp, ok: true}
}

// on reports whether v judges the record of l.
func (v verdict) on(l *coordinationv1.Lease) bool { return v.ok && l != nil && keyOf(l) == v.key }
