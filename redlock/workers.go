package redlock

import (
	"slices"
	"sync"
	"time"
)

// workerIdle is how long a node worker waits for work before it exits.
const workerIdle = 10 * time.Second

// maxIdleWorkers is the most workers a node keeps waiting for work: a burst
// of requests (the cold start of thousands of campaigns) starts a worker
// for each request in flight, and those beyond maxIdleWorkers exit as soon
// as they are done, instead of lingering for workerIdle with the stacks
// they grew.
const maxIdleWorkers = 32

// nodeWorkers holds the idle workers of one node, each by the channel it
// takes its next request from, the most recently idle last. A request goes
// to the most recently idle worker, so that the workers a node keeps are
// those its load needs at once: a worker left at the bottom by a burst
// gets no request and exits after workerIdle, however often requests come
// one at a time. (Handed to whichever worker waited longest, requests
// would keep every worker of the burst busy enough never to idle out.)
type nodeWorkers struct {
	mu   sync.Mutex
	idle []chan func() // each buffered, capacity 1
}

// take returns the channel of the most recently idle worker, removing it
// from the idle ones, or nil when none is idle.
func (w *nodeWorkers) take() chan func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.idle)
	if n == 0 {
		return nil
	}
	ch := w.idle[n-1]
	w.idle[n-1] = nil
	w.idle = w.idle[:n-1]
	return ch
}

// wait makes the worker of ch idle, unless maxIdleWorkers are already, and
// reports whether it did.
func (w *nodeWorkers) wait(ch chan func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.idle) >= maxIdleWorkers {
		return false
	}
	w.idle = append(w.idle, ch)
	return true
}

// leave removes the idle worker of ch, and reports false when a request
// took it meanwhile (the request is then on its way on ch).
func (w *nodeWorkers) leave(ch chan func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.Index(w.idle, ch)
	if i < 0 {
		return false
	}
	w.idle = slices.Delete(w.idle, i, i+1)
	return true
}

// onNode runs f on an idle worker goroutine of node i, the most recently
// idle one, or on a new one (which then stays to serve node i until it
// idles for workerIdle, the node has maxIdleWorkers idle already, or the
// Backend stops). Reusing workers spares each request a goroutine start
// and the growth of its stack to go-redis's depth. It reports false when
// the Backend has stopped.
func (b *Backend) onNode(i int, f func()) bool {
	select {
	case <-b.stop:
		return false
	default:
	}
	w := &b.workers[i]
	if ch := w.take(); ch != nil {
		ch <- f
		return true
	}
	return b.spawn(func() { b.serveNode(w, f) })
}

// serveNode runs f, then the requests handed to it as an idle worker of w,
// until it idles for workerIdle, w has maxIdleWorkers idle already, or the
// Backend stops.
func (b *Backend) serveNode(w *nodeWorkers, f func()) {
	ch := make(chan func(), 1)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		f()
		if !w.wait(ch) {
			return
		}
		if timer == nil {
			timer = time.NewTimer(workerIdle)
		} else {
			timer.Reset(workerIdle)
		}
		select {
		case f = <-ch:
			continue
		case <-timer.C:
		case <-b.stop:
		}
		if w.leave(ch) {
			return
		}
		f = <-ch // taken by onNode as it left: run the request
	}
}
