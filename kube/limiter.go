package kube

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// RateLimiter is a client-side rate limiter for the client of a [Backend]
// (the RateLimiter field of its rest.Config): a token bucket, as
// client-go's default, which serves the renewals and releases of the
// Backend's held Leases before any other request waiting in it (reads,
// campaigns, lists), and keeps a tenth of its burst for them: other
// requests take a token only while more than that many are left. A held
// election's renewal therefore waits for the renewals queued before it,
// never for the reads of waiting candidates, however many there are. The
// kube:// URLs configure their client with one.
//
// A request that cannot be sent before its context ends fails with an
// error naming the limiter's qps and burst.
type RateLimiter struct {
	qps     float64
	burst   int
	reserve float64 // tokens other requests leave for renewals

	mu     sync.Mutex
	tokens float64
	last   time.Time
	queue  [2][]*limitWaiter // by class: renewals, then the others
	timer  *time.Timer       // runs dispatch while a queue is not empty

	late atomic.Int64 // renewals whose context ended while they waited
}

var _ flowcontrol.RateLimiter = (*RateLimiter)(nil)

// NewRateLimiter returns a RateLimiter sending at most qps requests per
// second, sustained, and bursts of up to burst; it panics unless qps > 0
// and burst >= 1. Set it as the RateLimiter of the rest.Config of the
// Backend's client (client-go then ignores the config's QPS and Burst).
func NewRateLimiter(qps float32, burst int) *RateLimiter {
	if !(qps > 0) || math.IsInf(float64(qps), 0) || burst < 1 {
		panic(fmt.Sprintf("kube: NewRateLimiter(%v, %d): want qps > 0 and burst >= 1", qps, burst))
	}
	return &RateLimiter{
		qps:     float64(qps),
		burst:   burst,
		reserve: float64(burst / 10),
		tokens:  float64(burst),
		last:    time.Now(),
	}
}

// limitWaiter is a request waiting for a token.
type limitWaiter struct {
	ready   chan struct{} // closed when granted
	granted bool          // under RateLimiter.mu
}

// class of a request: renewals (and releases) of held Leases first.
const (
	classRenewal = 0
	classOther   = 1
)

type renewalKey struct{}

// renewal marks ctx as the context of a renewal or release of a held
// Lease: a [RateLimiter] sends it before the other requests waiting.
func renewal(ctx context.Context) context.Context {
	return context.WithValue(ctx, renewalKey{}, true)
}

func classOf(ctx context.Context) int {
	if v, _ := ctx.Value(renewalKey{}).(bool); v {
		return classRenewal
	}
	return classOther
}

// refill adds the tokens earned since the last refill; r.mu is held.
func (r *RateLimiter) refill(now time.Time) {
	if d := now.Sub(r.last); d > 0 {
		r.tokens = min(float64(r.burst), r.tokens+d.Seconds()*r.qps)
		r.last = now
	}
}

// need returns how many tokens must be in the bucket for a request of
// class c to take one.
func (r *RateLimiter) need(c int) float64 {
	if c == classRenewal {
		return 1
	}
	return 1 + r.reserve
}

// takeable reports whether a request of class c arriving now may take a
// token without queueing; r.mu is held.
func (r *RateLimiter) takeable(c int) bool {
	for k := 0; k <= c; k++ {
		if len(r.queue[k]) > 0 {
			return false
		}
	}
	return r.tokens >= r.need(c)
}

// Wait returns nil once the request may be sent, or an error naming the
// limit when ctx ends first. It implements flowcontrol.RateLimiter.
func (r *RateLimiter) Wait(ctx context.Context) error {
	c := classOf(ctx)
	start := time.Now()
	r.mu.Lock()
	r.refill(start)
	if r.takeable(c) {
		r.tokens--
		r.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		r.mu.Unlock()
		return err
	}
	w := &limitWaiter{ready: make(chan struct{})}
	r.queue[c] = append(r.queue[c], w)
	ahead := 0
	for k := 0; k <= c; k++ {
		ahead += len(r.queue[k]) - 1
	}
	ahead++
	r.schedule()
	r.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	if w.granted {
		r.mu.Unlock()
		return nil
	}
	r.queue[c] = slices.DeleteFunc(r.queue[c], func(x *limitWaiter) bool { return x == w })
	r.mu.Unlock()
	if c == classRenewal {
		r.late.Add(1)
	}
	return &LimitError{QPS: r.qps, Burst: r.burst, Waited: time.Since(start), Queued: ahead, Renewal: c == classRenewal}
}

// schedule arms the timer for when the first queued request can take a
// token; r.mu is held.
func (r *RateLimiter) schedule() {
	c := classRenewal
	if len(r.queue[c]) == 0 {
		c = classOther
	}
	if len(r.queue[c]) == 0 {
		return
	}
	d := time.Duration((r.need(c) - r.tokens) / r.qps * float64(time.Second))
	d = max(d, 0)
	if r.timer == nil {
		r.timer = time.AfterFunc(d, r.dispatch)
		return
	}
	r.timer.Reset(d)
}

// dispatch grants tokens to the queued requests, renewals first.
func (r *RateLimiter) dispatch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refill(time.Now())
	for c := range r.queue {
		for len(r.queue[c]) > 0 && r.tokens >= r.need(c) {
			w := r.queue[c][0]
			r.queue[c] = r.queue[c][1:]
			r.tokens--
			w.granted = true
			close(w.ready)
		}
		if len(r.queue[c]) > 0 {
			break // the others wait behind this class
		}
	}
	r.schedule()
}

// TryAccept takes a token if one is free for a request that is not a
// renewal, and reports whether it did. It implements
// flowcontrol.RateLimiter.
func (r *RateLimiter) TryAccept() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refill(time.Now())
	if !r.takeable(classOther) {
		return false
	}
	r.tokens--
	return true
}

// Accept waits for a token, as Wait does for a request that is not a
// renewal. It implements flowcontrol.RateLimiter.
func (r *RateLimiter) Accept() { _ = r.Wait(context.Background()) }

// Stop does nothing; it implements flowcontrol.RateLimiter.
func (r *RateLimiter) Stop() {}

// QPS returns the sustained rate; it implements flowcontrol.RateLimiter.
func (r *RateLimiter) QPS() float32 { return float32(r.qps) }

// Burst returns the largest burst.
func (r *RateLimiter) Burst() int { return r.burst }

// LateRenewals returns how many renewals or releases of held Leases the
// limiter could not send before their context ended.
func (r *RateLimiter) LateRenewals() int64 { return r.late.Load() }

// LimitError is the error of a request that a [RateLimiter] could not send
// before its context ended: the client's rate limit, not the apiserver,
// held it up.
type LimitError struct {
	QPS     float64       // the limiter's sustained rate
	Burst   int           // the limiter's burst
	Waited  time.Duration // how long the request waited
	Queued  int           // requests ahead of it, itself included, when it arrived
	Renewal bool          // a renewal or release of a held Lease
}

func (e *LimitError) Error() string {
	what := "request"
	if e.Renewal {
		what = "renewal"
	}
	return fmt.Sprintf("the client's rate limit (qps %g, burst %d) held the %s %v, %d in line, until its context ended: raise qps and burst, or hold and watch fewer elections on the client",
		e.QPS, e.Burst, what, e.Waited.Round(time.Millisecond), e.Queued)
}
