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

// holdMany campaigns for Held elections on client a.
func (r *runner) holdMany(ctx context.Context, b *bstate) {
	res := b.result(Renew)
	leases := make([]backend.Lease, r.o.Held)
	var mu sync.Mutex
	parallel(r.o.Held, r.o.Concurrency, func(i int) {
		if ctx.Err() != nil {
			return
		}
		l, err := r.campaign(ctx, b, b.a, r.name("renew/"+strconv.Itoa(i)))
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed(ctx, res, fmt.Errorf("campaign: %w", err))
			return
		}
		leases[i] = l
	})
	for _, l := range leases {
		if l != nil {
			b.renew = append(b.renew, l)
		}
	}
}

// renewAll renews every lease holdMany took, Concurrency at a time.
func (r *runner) renewAll(ctx context.Context, b *bstate, _ int) {
	res := b.result(Renew)
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
	defer b.mu.Unlock()
	b.ops += len(b.renew) - len(lost)
	b.opTime += time.Since(t0)
	kept := b.renew[:0]
	for i, l := range b.renew {
		if lost[i] {
			delete(b.held, l)
		} else {
			kept = append(kept, l)
		}
	}
	b.renew = kept
}

// releaseMany releases the leases of holdMany, also when ctx ended (the
// cleanup would otherwise release them one by one).
func (r *runner) releaseMany(ctx context.Context, b *bstate) {
	r.perSecond(Renew)(ctx, b)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opTimeout())
	defer cancel()
	parallel(len(b.renew), r.o.Concurrency, func(i int) { _ = r.release(ctx, b, b.renew[i]) })
	b.renew = nil
}
