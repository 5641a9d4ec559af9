package compare

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// keeper renews the leases the [Renew] workload has taken so far, every
// renewal interval, until it is halted: it keeps them alive from the moment
// each is taken until the measured rounds begin, however long taking them
// all on every backend lasts (a loaded machine can take longer than a TTL
// to campaign for a thousand elections).
type keeper struct {
	mu     sync.Mutex
	leases []backend.Lease
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// startKeeper starts a keeper; halt it before its leases are renewed by
// anyone else.
func (r *runner) startKeeper(ctx context.Context) *keeper {
	k := &keeper{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(k.done)
		t := time.NewTicker(r.renewInterval())
		defer t.Stop()
		for {
			select {
			case <-k.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			k.mu.Lock()
			ls := slices.Clone(k.leases)
			k.mu.Unlock()
			parallel(len(ls), r.o.Concurrency, func(i int) {
				rctx, cancel := context.WithTimeout(ctx, r.opTimeout())
				defer cancel()
				_ = ls[i].Renew(rctx) // a lease lost here shows in the first round
			})
		}
	}()
	return k
}

// add has the keeper renew l from now on.
func (k *keeper) add(l backend.Lease) {
	k.mu.Lock()
	k.leases = append(k.leases, l)
	k.mu.Unlock()
}

// halt stops the keeper and waits until no renewal of its is in flight. It
// may be called more than once, and on a nil keeper.
func (k *keeper) halt() {
	if k == nil {
		return
	}
	k.once.Do(func() { close(k.stop) })
	<-k.done
}
