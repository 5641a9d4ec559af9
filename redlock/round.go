package redlock

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// errStopped is the reply of a node call that could not start because the
// Backend has shut down.
var errStopped = errors.New("backend stopped")

// call is one request to one node within a round.
type call struct {
	done chan struct{} // closed once val and err are set
	val  any
	err  error
}

// nodeFunc is the request a round sends to one node.
type nodeFunc func(ctx context.Context, c redis.UniversalClient) (any, error)

// round sends fn to every node in parallel, on the nodes' workers. The
// requests share one ctx, derived from ctx with a deadline NodeTimeout away
// (a request ordered after another loses the time it waited, which NodeTimeout
// bounds too). When after is not nil, the
// request to node i is sent only once after[i] has finished, so it cannot
// overtake that earlier request on the node (they travel on different
// connections). The calls go on after collect returns; a caller that must
// order a later request after one of them passes them as after.
func (b *Backend) round(ctx context.Context, after []*call, fn nodeFunc) (calls []*call, replied <-chan int) {
	ch := make(chan int, len(b.clients))
	calls = make([]*call, len(b.clients))
	rctx, cancel := context.WithTimeout(ctx, b.cfg.nodeTimeout)
	var left atomic.Int32
	left.Store(int32(len(b.clients)))
	finish := func(i int, c *call) {
		close(c.done)
		ch <- i
		if left.Add(-1) == 0 {
			cancel()
		}
	}
	for i, cl := range b.clients {
		c := &call{done: make(chan struct{})}
		calls[i] = c
		ok := b.onNode(i, func() {
			if after != nil {
				<-after[i].done
			}
			c.val, c.err = fn(rctx, cl)
			finish(i, c)
		})
		if !ok {
			c.err = errStopped
			finish(i, c)
		}
	}
	return calls, ch
}

// workerIdle is how long a node worker waits for work before it exits.
const workerIdle = 10 * time.Second

// onNode runs f on an idle worker goroutine of node i, or on a new one
// (which then stays to serve node i until it idles for workerIdle or the
// Backend stops). Reusing workers spares each request a goroutine start and
// the growth of its stack to go-redis's depth. It reports false when the
// Backend has stopped.
func (b *Backend) onNode(i int, f func()) bool {
	select {
	case b.work[i] <- f:
		return true
	default:
	}
	return b.spawn(func() {
		f()
		idle := time.NewTimer(workerIdle)
		defer idle.Stop()
		for {
			select {
			case f := <-b.work[i]:
				f()
				idle.Reset(workerIdle)
			case <-idle.C:
				return
			case <-b.stop:
				return
			}
		}
	})
}

// collect waits for the replies of a round until decide reports true (it is
// given the calls whose replies are in, by node; nil for the others), every
// node has replied, or ctx ends. The requests end by NodeTimeout through
// their contexts; when some client is of a type that may not honour ctx
// deadlines on reads, a guard timer of twice that (plus 10 ms, for a
// starved process) stops the wait.
func (b *Backend) collect(ctx context.Context, calls []*call, replied <-chan int, decide func(got []*call) bool) []*call {
	got := make([]*call, len(calls))
	var guard <-chan time.Time // nil: the requests' contexts bound the wait
	if !b.ctxBound {
		timer := time.NewTimer(2*b.cfg.nodeTimeout + 10*time.Millisecond)
		defer timer.Stop()
		guard = timer.C
	}
	for n := 0; n < len(calls); n++ {
		select {
		case i := <-replied:
			got[i] = calls[i]
			if decide != nil && decide(got) {
				return got
			}
		case <-ctx.Done():
			return got
		case <-guard:
			// A starved process may see the timer and the replies at
			// once: take the replies that are in.
			for {
				select {
				case i := <-replied:
					got[i] = calls[i]
				default:
					return got
				}
			}
		}
	}
	return got
}

// nodeErr describes the first node error of a round for an error message.
func nodeErr(err error) string {
	if err == nil {
		return "no node replied in time"
	}
	return err.Error()
}
