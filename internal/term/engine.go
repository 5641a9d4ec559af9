package term

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Engine runs the terms held on one Backend: one scheduler goroutine, while
// it has terms, and one timer.
type Engine struct {
	key any // the registry key, nil for an unregistered engine

	mu      sync.Mutex
	n       int // terms started and not finished
	running bool
	heap    termHeap
	loss    lossWatch
	kick    chan struct{} // capacity 1: something changed
	// live counts the engine's goroutines (scheduler, shards, renewal
	// workers); idle, when set, is closed once none is left or a term
	// starts again, for the Finish of the last term to wait on.
	live int
	idle chan struct{}

	// renewals holds the renewals started and not yet taken by a worker
	// (see work.go).
	renewals renewQueue[job]
}

// registry holds the engine of each Backend with terms.
var registry struct {
	sync.Mutex
	m map[any]*Engine
}

// attach adds t to the engine of b, creating or starting it as needed.
func attach(b backend.Backend, t *Term) {
	registry.Lock()
	e := lookup(b)
	e.mu.Lock()
	registry.Unlock()
	t.e = e
	e.n++
	if e.idle != nil {
		close(e.idle)
		e.idle = nil
	}
	if !e.running {
		e.running = true
		e.live++
		go e.run()
	}
	e.loss.watchLocked(t)
	e.scheduleLocked(t)
	e.mu.Unlock()
	e.poke()
}

// lookup returns the registered engine of b, registering a new one. A
// Backend that cannot be a map key (a struct holding a slice) gets an
// engine of its own for each term. Called with registry held.
func lookup(b backend.Backend) (e *Engine) {
	defer func() {
		if recover() != nil { // b is not comparable
			e = newEngine(nil)
		}
	}()
	if e = registry.m[b]; e == nil {
		e = newEngine(b)
		if registry.m == nil {
			registry.m = make(map[any]*Engine)
		}
		registry.m[b] = e
	}
	return e
}

func newEngine(key any) *Engine {
	e := &Engine{key: key, kick: make(chan struct{}, 1), renewals: newRenewQueue[job]()}
	e.loss = lossWatch{mu: &e.mu, lost: e.lose, exited: e.exitedLocked, start: func(run func()) {
		e.live++
		go run()
	}}
	return e
}

// poke wakes the scheduler.
func (e *Engine) poke() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// run is the scheduler: it handles each term whose next instant has come,
// then sleeps until the next one or a poke. It returns once no term is
// left, unregistering the engine.
func (e *Engine) run() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var acts []action
	for {
		e.mu.Lock()
		if e.n == 0 && e.stop() {
			return
		}
		now := time.Now()
		for len(e.heap) > 0 && !now.Before(e.heap[0].st.wake) {
			acts = e.handleLocked(e.heap[0], now, acts)
		}
		if len(acts) > 0 {
			acts = e.coalesceLocked(now, acts)
		}
		next := time.Hour
		if len(e.heap) > 0 {
			next = e.heap[0].st.wake.Sub(now)
		}
		if e.renewals.len() > 0 {
			e.workLocked(e.renewals.unstall(now))
			next = min(next, stallCheck)
		}
		e.mu.Unlock()
		for i, a := range acts {
			a.do()
			acts[i] = action{}
		}
		acts = acts[:0]
		timer.Reset(next)
		select {
		case <-timer.C:
		case <-e.kick:
		}
	}
}

// stop ends the scheduler if no term is left once the registry is locked
// too, and reports whether it did. Called with e.mu held; returns with it
// released when it stopped, held otherwise.
func (e *Engine) stop() bool {
	e.mu.Unlock()
	registry.Lock()
	defer registry.Unlock()
	e.mu.Lock()
	if e.n > 0 {
		return false
	}
	e.running = false
	if e.key != nil && registry.m[e.key] == e {
		delete(registry.m, e.key)
	}
	e.exitedLocked()
	e.mu.Unlock()
	return true
}

// exitedLocked records the exit of one of the engine's goroutines, and
// wakes the Finish of the last term once none is left.
func (e *Engine) exitedLocked() {
	e.live--
	if e.live == 0 && e.n == 0 && e.idle != nil {
		close(e.idle)
		e.idle = nil
	}
}

// idleLocked returns, when no term is left but some goroutine of the
// engine is, a channel closed once none is or a term starts again; nil
// otherwise.
func (e *Engine) idleLocked() <-chan struct{} {
	if e.n > 0 || e.live == 0 {
		return nil
	}
	if e.idle == nil {
		e.idle = make(chan struct{})
	}
	return e.idle
}

// action is what the scheduler does outside its lock: report a term's
// end.
type action struct {
	t      *Term
	reason error // the term ended with it
}

func (a action) do() {
	if a.reason != nil {
		a.t.ended1(a.reason, true)
	}
}

// handleLocked handles t at its next instant: the step-down point, a
// renewal due. It leaves t rescheduled.
func (e *Engine) handleLocked(t *Term, now time.Time, acts []action) []action {
	st := &t.st
	if !now.Before(t.tm.StepDownAt(st.deadline)) {
		switch {
		case st.reason == nil:
			reason := fmt.Errorf("%w: %w (%s)", ErrLeaseLost, ErrNoRenewal, t.why())
			e.endLocked(t, reason)
			acts = append(acts, action{t: t, reason: reason})
		case st.keep:
			st.keep = false // past the step-down point: nothing left to keep
		}
	}
	if e.renewsLocked(t) && st.attempt == nil && !now.Before(st.due) {
		acts = e.startLocked(t, now, acts)
	}
	e.scheduleLocked(t)
	return acts
}

// coalesce is, as a fraction of RenewInterval, how early a renewal starts
// when another renewal of the engine starts: renewals due within
// RenewInterval/coalesce of one another go out together, so that the
// leases a driver renews with one request (a Redis batch, an etcd
// keepalive, a ZooKeeper session's read) fall into step and stay there,
// however their terms were started.
const coalesce = 8

// coalesceLocked starts, once renewals are starting, the renewals due within
// RenewInterval/coalesce of now. Any action means renewals may start (a
// step-down's renewal is none, but one extra early start is harmless).
func (e *Engine) coalesceLocked(now time.Time, acts []action) []action {
	for len(e.heap) > 0 {
		t := e.heap[0]
		st := &t.st
		if !st.wake.Equal(st.due) || st.attempt != nil || !e.renewsLocked(t) ||
			st.due.After(now.Add(t.tm.RenewInterval/coalesce)) {
			return acts
		}
		acts = e.startLocked(t, now, acts)
		e.scheduleLocked(t)
	}
	return acts
}

// startLocked starts a renewal of t, bounded by its step-down point: it
// queues it for the renewal workers (see work.go). It returns acts with
// one more entry, which does nothing, so that the caller knows renewals
// are starting.
func (e *Engine) startLocked(t *Term, now time.Time, acts []action) []action {
	ctx, cancel := context.WithDeadline(context.Background(), t.tm.StepDownAt(t.st.deadline))
	a := &attempt{ctx: ctx, cancel: cancel, since: now, done: make(chan struct{})}
	t.st.attempt = a
	e.enqueueLocked(t, a, now)
	return append(acts, action{t: t})
}

// lose ends t on the loss of its lease, unless it has ended already.
func (e *Engine) lose(t *Term) {
	e.mu.Lock()
	if t.st.reason != nil || t.st.finished {
		e.mu.Unlock()
		return
	}
	reason := fmt.Errorf("%w: the backend reports it gone: %w", ErrLeaseLost, backend.ErrLost)
	e.endLocked(t, reason)
	t.st.keep = false
	e.scheduleLocked(t)
	e.mu.Unlock()
	t.ended1(reason, true)
	e.poke()
}

// job is a queued renewal.
type job struct {
	t *Term
	a *attempt
}

// enqueueLocked queues attempt a of t for the renewal workers, starting
// one if the queue holds more renewals than there are workers, within the
// limit. The renewal of a [backend.TrailingLease] whose Deadline trails
// and that is no [backend.SinceRenewer] runs in a goroutine of its own
// instead: its driver may share one request among the renewals that began
// before it was sent (a ZooKeeper renewal needs an answer to a request
// sent after it began), so renewals run one after another would each cost
// a request. A SinceRenewer is told when its renewal was started, and
// renewals started together share a request on the workers too.
func (e *Engine) enqueueLocked(t *Term, a *attempt, now time.Time) {
	if t.trails && t.since == nil {
		go t.renew(a)
		return
	}
	e.workLocked(e.renewals.push(job{t: t, a: a}, now))
}

// workLocked starts n renewal workers.
func (e *Engine) workLocked(n int) {
	for range n {
		e.live++
		go e.work()
	}
}

// work is a renewal worker: it runs queued renewals until none is left.
func (e *Engine) work() {
	e.mu.Lock()
	for {
		j, ok := e.renewals.take()
		if !ok {
			break
		}
		e.mu.Unlock()
		j.t.renew(j.a)
		e.mu.Lock()
	}
	e.exitedLocked()
	e.mu.Unlock()
}

// renewsLocked reports whether t is renewed: while it lasts, and after a
// voluntary end until its callback returns or its step-down point passes.
func (e *Engine) renewsLocked(t *Term) bool {
	return !t.st.finished && (t.st.reason == nil || t.st.keep)
}

// endLocked records the end of t with reason: it is watched for loss no
// more. The caller then calls t.ended1 outside the lock.
func (e *Engine) endLocked(t *Term, reason error) {
	t.st.reason = reason
	e.loss.unwatchLocked(t)
}

// scheduleLocked places t in the heap at its next instant, or removes it
// when it has none.
func (e *Engine) scheduleLocked(t *Term) {
	st := &t.st
	var wake time.Time
	if !st.finished && (st.reason == nil || st.keep) {
		wake = t.tm.StepDownAt(st.deadline)
	}
	if e.renewsLocked(t) && st.attempt == nil && !st.due.IsZero() && (wake.IsZero() || st.due.Before(wake)) {
		wake = st.due
	}
	switch {
	case wake.IsZero() && st.idx >= 0:
		heap.Remove(&e.heap, st.idx)
	case wake.IsZero():
	case st.idx >= 0:
		st.wake = wake
		heap.Fix(&e.heap, st.idx)
	default:
		st.wake = wake
		heap.Push(&e.heap, t)
	}
}

// termHeap orders terms by their next instant.
type termHeap []*Term

func (h termHeap) Len() int           { return len(h) }
func (h termHeap) Less(i, j int) bool { return h[i].st.wake.Before(h[j].st.wake) }
func (h termHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].st.idx, h[j].st.idx = i, j
}
func (h *termHeap) Push(x any) {
	t := x.(*Term)
	t.st.idx = len(*h)
	*h = append(*h, t)
}
func (h *termHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.st.idx = -1
	return t
}
