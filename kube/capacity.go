package kube

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/leaderkit/elector/backend"
)

// renewShare is the part of the client's rate that the renewals of the
// Backend's held elections may take; the rest is left for the reads and
// campaigns. A Campaign that would take the renewals past it waits.
const renewShare = 0.9

var _ backend.Warner = (*Backend)(nil)

// clientLimiter returns the rate limiter of client's REST client when it
// is a [RateLimiter], nil otherwise.
func clientLimiter(client any) *RateLimiter {
	rc, ok := client.(interface{ RESTClient() rest.Interface })
	if !ok || rc.RESTClient() == nil {
		return nil
	}
	var l flowcontrol.RateLimiter = rc.RESTClient().GetRateLimiter()
	r, _ := l.(*RateLimiter)
	return r
}

// renewRate returns how many renewals a second l takes, from the intervals
// between its successful renewals (TTL/3, the portable layer's default,
// before it has two): the retries of an outage would make the held leases
// look several times as costly, and hold every campaign back once the
// apiserver is back. The estimate follows a shorter interval at once and
// a longer one slowly (see renewed): a renewal late behind a slow answer
// does not make the lease look cheaper than its schedule, which would let
// in campaigns whose renewals take the client past its rate once the
// apiserver answers quickly again.
func (l *lease) renewRate() float64 {
	every := time.Duration(l.every.Load())
	if every <= 0 {
		every = time.Duration(l.secs) * time.Second / 3
	}
	return 1 / every.Seconds()
}

// slowGain is the weight of an interval longer than the estimate (see
// renewRate): about slowGain intervals at a longer schedule move the
// estimate most of the way to it.
const slowGain = 8

// renewed records that a renewal of l that succeeded started at now.
func (l *lease) renewed(now time.Time) {
	if !l.lastRenew.IsZero() {
		ttl := time.Duration(l.secs) * time.Second
		d := min(max(now.Sub(l.lastRenew), ttl/10), ttl)
		switch old := time.Duration(l.every.Load()); {
		case old <= 0:
		case d < old:
			d = (old + d) / 2
		default:
			d = old + (d-old)/slowGain
		}
		l.every.Store(int64(d))
	}
	l.lastRenew = now
}

// renewDemand returns the renewals per second of the held leases and the
// campaigns admitted; b.mu is held.
func (b *Backend) renewDemand() (float64, int) {
	sum, n := b.pending, 0
	for _, ls := range b.held {
		for _, l := range ls {
			sum += l.renewRate()
			n++
		}
	}
	return sum, n
}

// admit returns once a lease of ttl can be renewed within renewShare of
// the client's rate besides those the Backend holds, with a function to
// call when the campaign's take-over is done; or ctx.Err(), or an error
// wrapping [backend.ErrClosed]. It reports whether it waited. The first
// campaign it holds back records the warning Warnings returns.
func (b *Backend) admit(ctx context.Context, ttl time.Duration) (func(), bool, error) {
	r := 3 / ttl.Seconds()
	waited := false
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, waited, backend.ErrClosed
		}
		demand, n := b.renewDemand()
		if b.rate <= 0 || demand == 0 || demand+r <= renewShare*b.rate {
			b.pending += r
			b.mu.Unlock()
			return func() {
				b.mu.Lock()
				b.pending -= r
				b.roomMade()
				b.mu.Unlock()
			}, waited, nil
		}
		if b.overload == "" {
			b.overload = b.overloadWarning(n, demand)
		}
		room := b.room
		b.mu.Unlock()
		waited = true
		select {
		case <-ctx.Done():
			return nil, waited, ctx.Err()
		case <-b.done:
			return nil, waited, backend.ErrClosed
		case <-room:
		}
	}
}

// roomMade wakes the campaigns admit holds back; b.mu is held.
func (b *Backend) roomMade() {
	close(b.room)
	b.room = make(chan struct{})
}

// overloadWarning words the warning of a campaign held back while the
// Backend holds n elections renewed demand times a second; b.mu is held.
func (b *Backend) overloadWarning(n int, demand float64) string {
	limit := fmt.Sprintf("qps %g", b.rate)
	if b.limit != nil {
		limit += fmt.Sprintf(", burst %d", b.limit.Burst())
	}
	return fmt.Sprintf("kube: the Backend holds %d elections renewed about %.0f times a second, %.0f%% of the client's rate limit (%s): further campaigns wait until one of them ends; raise qps and burst, or hold fewer elections on one Backend (capacity about %.0f%% of qps × the renewal interval)",
		n, demand, 100*demand/b.rate, limit, 100*renewShare)
}

// Warnings implements [backend.Warner]: once the Backend's held elections
// have taken the renewals to the client's rate limit and a campaign waited
// for room (see the package documentation, # Timing), a warning naming the
// limit and the numbers; and, when the client's rate limiter is not a
// [RateLimiter], that renewals wait behind the other requests in it.
func (b *Backend) Warnings() []string {
	var out []string
	if b.rate > 0 && b.limit == nil {
		out = append(out, fmt.Sprintf("kube: the client's rate limiter (qps %g) is not a kube.RateLimiter: renewals of held Leases wait in it behind reads and campaigns; set the RateLimiter of the client's rest.Config to kube.NewRateLimiter(qps, burst)", b.rate))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.overload != "" {
		out = append(out, b.overload)
	}
	return out
}
