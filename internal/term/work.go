package term

import "time"

// Renewal workers. A renewal runs on one of a few worker goroutines of the
// engine, which exist only while renewals are queued: the scheduler queues
// the renewals it starts, and each worker runs them one after another until
// the queue is empty, then exits. Most renewals of a driver that shares its
// round trips (one Redis batch with riders, one etcd keepalive, one
// ZooKeeper session's read) return at once once the first of them has
// made the trip, so that a few workers renew thousands of terms without a
// goroutine, a stack or a scheduler hand-off each. Renewals that block on
// their own round trip (a driver that shares none, a slow store) stall the
// queue: while it makes no progress for stallCheck, the scheduler doubles
// the number of workers allowed, up to maxWorkers, so that a slow store
// delays renewals by at most a few stall checks before each has a worker.

// Bounds of the renewal workers of one engine.
const (
	minWorkers = 16
	maxWorkers = 256
	// stallCheck is how often the scheduler checks a non-empty queue for
	// progress.
	stallCheck = 20 * time.Millisecond
)

// job is a queued renewal.
type job struct {
	t *Term
	a *attempt
}

// queuedLocked returns the number of renewals waiting for a worker.
func (e *Engine) queuedLocked() int { return len(e.queue) - e.head }

// enqueueLocked queues attempt a of t and starts a worker if the queue
// holds more renewals than there are workers, within the limit. The
// renewal of a [backend.TrailingLease] whose Deadline trails and that is
// no [backend.SinceRenewer] runs in a goroutine of its own instead: its
// driver may share one request among the renewals that began before it
// was sent (a ZooKeeper renewal needs an answer to a request sent after it
// began), so renewals run one after another would each cost a request. A
// SinceRenewer is told when its renewal was started, and renewals started
// together share a request on the workers too.
func (e *Engine) enqueueLocked(t *Term, a *attempt, now time.Time) {
	if t.trails && t.since == nil {
		go t.renew(a)
		return
	}
	if e.queuedLocked() == 0 {
		e.seen, e.progress = e.taken, now // the stall clock starts
	}
	e.queue = append(e.queue, job{t: t, a: a})
	e.spawnLocked()
}

// spawnLocked starts workers while fewer run than renewals are queued and
// the limit allows.
func (e *Engine) spawnLocked() {
	for e.workers < min(e.queuedLocked(), e.limit) {
		e.workers++
		e.live++
		go e.work()
	}
}

// unstallLocked raises the limit of workers, and starts them, when the
// queue has made no progress for stallCheck while every allowed worker was
// busy. A queue that has just filled has not stalled: its workers have
// had no time to take anything yet.
func (e *Engine) unstallLocked(now time.Time) {
	if e.taken != e.seen {
		e.seen, e.progress = e.taken, now
		return
	}
	if now.Sub(e.progress) >= stallCheck && e.workers >= e.limit && e.limit < maxWorkers {
		e.limit = min(2*e.limit, maxWorkers)
		e.spawnLocked()
		e.progress = now
	}
}

// work runs queued renewals until none is left.
func (e *Engine) work() {
	e.mu.Lock()
	for e.queuedLocked() > 0 {
		j := e.queue[e.head]
		e.queue[e.head] = job{}
		e.head++
		if e.head == len(e.queue) {
			e.queue, e.head = e.queue[:0], 0
		}
		e.taken++
		e.mu.Unlock()
		j.t.renew(j.a)
		e.mu.Lock()
	}
	e.workers--
	if e.workers == 0 {
		e.limit = minWorkers
	}
	e.exitedLocked()
	e.mu.Unlock()
}
