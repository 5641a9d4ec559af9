package compare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// parallel runs f(i) for i in [0, n) on at most k goroutines.
func parallel(n, k int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, k) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// holdMany campaigns for Held elections (fewer on a rate-limited client:
// heldOn) on a client of OpenCounted, or on client a when the target has
// none, and keeps them renewed until the rounds begin.
func (r *runner) holdMany(ctx context.Context, b *bstate) {
	res := b.result(Renew)
	b.rc = b.a
	if b.t.OpenCounted != nil {
		c, err := b.t.OpenCounted(ctx)
		if err != nil {
			failed(ctx, res, fmt.Errorf("open a counted client: %w", err))
			return
		}
		b.addClient(c)
		b.rc = c
	}
	n := r.heldOn(b)
	res.Held = n
	leases := make([]backend.Lease, n)
	var mu sync.Mutex
	b.keep = r.startKeeper(ctx)
	parallel(n, r.o.Concurrency, func(i int) {
		if ctx.Err() != nil {
			return
		}
		l, err := r.campaign(ctx, b, b.rc, r.name("renew/"+strconv.Itoa(i)))
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed(ctx, res, fmt.Errorf("campaign: %w", err))
			return
		}
		leases[i] = l
		b.keep.add(l)
	})
	for _, l := range leases {
		if l != nil {
			b.renew = append(b.renew, l)
		}
	}
}

// heldOn returns how many elections the Renew workload holds on b's
// renewing client: Options.Held, or, when the client limits its request
// rate (a driver with RequestRate, such as kube's), as many as half that rate renews every
// renewal interval (at least one), since each needs a request per interval
// on such a backend. The other half is left to the client's other requests
// (the campaigns, the keeper's renewals while they run, watches), so that
// the limiter's bucket is full again when the rounds begin and renewals do
// not queue behind it: at the whole rate the rounds would measure the
// limiter. It records the rate in b's report.
func (r *runner) heldOn(b *bstate) int {
	rate := requestRate(b.rc.Backend)
	b.rep.RequestRate = rate
	if rate <= 0 {
		return r.o.Held
	}
	return min(r.o.Held, max(1, int(rate/2*r.renewInterval().Seconds())))
}

// renewAll renews every lease holdMany took, Concurrency at a time.
func (r *runner) renewAll(ctx context.Context, b *bstate, i int) {
	res := b.result(Renew)
	if i == 0 {
		b.keep.halt()
	}
	if i == 0 && b.rc != nil {
		b.round0 = time.Now()
		if count := requestsOf(b.rc); count != nil {
			b.req0 = count()
		}
	}
	var mu sync.Mutex
	lost := map[int]bool{}
	t0 := time.Now()
	parallel(len(b.renew), r.o.Concurrency, func(i int) {
		if ctx.Err() != nil {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, r.opTimeout())
		s := time.Now()
		err := b.renew[i].Renew(rctx)
		d := time.Since(s)
		cancel()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(err, backend.ErrLost):
			lost[i] = true
			failed(ctx, res, fmt.Errorf("renew: %w", err))
		case err != nil:
			failed(ctx, res, fmt.Errorf("renew: %w", err))
		default:
			res.add(d)
		}
	})
	b.mu.Lock()
	b.ops += len(b.renew) - len(lost)
	b.opTime += time.Since(t0)
	kept := b.renew[:0]
	for k, l := range b.renew {
		if lost[k] {
			delete(b.held, l)
		} else {
			kept = append(kept, l)
		}
	}
	b.renew = kept
	b.mu.Unlock()
}

// requestsOf returns what counts the requests c sends: c.Requests, else
// its backend's own count (requestCount), else nil.
func requestsOf(c *Client) func() int64 {
	if c == nil {
		return nil
	}
	if c.Requests != nil {
		return c.Requests
	}
	return requestCount(c.Backend)
}

// renewInterval is the time between two rounds of the Renew workload.
func (r *runner) renewInterval() time.Duration { return r.o.TTL / 3 }

// countRequests, after the last round, waits until RenewRounds intervals
// have passed since the first round began, so that the window holds the
// background traffic of as many intervals as there were rounds, and
// records the requests the client sent in it. releaseMany, the phase's
// finish, calls it once every backend's rounds have run: one backend's
// wait never delays another's last round.
func (r *runner) countRequests(ctx context.Context, b *bstate) {
	count := requestsOf(b.rc)
	if count == nil || b.round0.IsZero() {
		return
	}
	window := time.Duration(r.o.RenewRounds) * r.renewInterval()
	sleep(ctx, time.Until(b.round0.Add(window)))
	if ctx.Err() != nil || len(b.renew) == 0 {
		return
	}
	total := count() - b.req0
	b.result(Renew).Requests = &RequestCount{Total: total, Window: window,
		PerHeld:   float64(total) / float64(r.o.RenewRounds) / float64(len(b.renew)),
		PerSecond: float64(total) / window.Seconds()}
}

// releaseMany releases the leases of holdMany, also when ctx ended (the cleanup would otherwise release
// them one by one), and closes the counted client.
func (r *runner) releaseMany(ctx context.Context, b *bstate) {
	r.countRequests(ctx, b)
	b.keep.halt()
	b.keep = nil
	r.perSecond(Renew)(ctx, b)
	parallel(len(b.renew), r.o.Concurrency, func(i int) { _ = r.release(ctx, b, b.renew[i]) })
	b.renew = nil
	if b.rc != nil && b.rc != b.a {
		b.closeClient(b.rc)
	}
	b.rc = nil
}
