package redlock

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// workersOnly returns a Backend with nodes nodes that can run node workers
// and nothing else.
func workersOnly(nodes int) *Backend {
	return &Backend{stop: make(chan struct{}), workers: make([]nodeWorkers, nodes)}
}

// After a burst of requests to a node, the workers it kept are those its
// load needs at once: requests sent one at a time, however often, keep one
// worker busy and let the others of the burst exit after workerIdle. A
// process's steady renewals (one batch on the wire at a time, a few per
// renew interval) then hold a few goroutines per node, not as many as the
// cold start needed.
func TestNodeWorkersShrinkToTheLoad(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const burst = 16
		b := workersOnly(1)
		// The workers at rest are the idle ones: runtime.NumGoroutine
		// would count the goroutines of the whole process, which other
		// tests' leftovers outside the bubble change.
		atRest := func() int {
			w := &b.workers[0]
			w.mu.Lock()
			defer w.mu.Unlock()
			return len(w.idle)
		}
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for range burst {
			wg.Add(1)
			if !b.onNode(0, func() { <-gate; wg.Done() }) {
				t.Fatal("onNode refused on a running Backend")
			}
		}
		close(gate)
		wg.Wait()
		synctest.Wait()
		if n := atRest(); n != burst {
			t.Fatalf("%d workers after a burst of %d requests, want %d", n, burst, burst)
		}
		// One request at a time, twice a second, for three idle periods:
		// each worker of the burst would get one within workerIdle if they
		// took turns.
		for range 6 * int(workerIdle/time.Second) {
			time.Sleep(500 * time.Millisecond)
			done := make(chan struct{})
			b.onNode(0, func() { close(done) })
			<-done
		}
		synctest.Wait()
		if n := atRest(); n > 1 {
			t.Errorf("%d node workers left serving one request at a time, want 1: the workers a burst left must idle out", n)
		}
		close(b.stop)
		b.wg.Wait()
	})
}
