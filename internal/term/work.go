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

// renewQueue is the queue of renewals started and not yet taken by a
// worker, and the count of workers that take them; J is a queued renewal.
// Its engine's mu guards it, and the engine starts the workers it asks
// for.
type renewQueue[J any] struct {
	jobs     []J       // queued from jobs[head] on
	head     int       // the next to take
	workers  int       // workers running
	limit    int       // workers allowed now: minWorkers, doubled while the queue stalls
	taken    uint64    // renewals taken so far
	seen     uint64    // taken, when the scheduler last saw it move
	progress time.Time // when the queue last filled or made progress
}

func newRenewQueue[J any]() renewQueue[J] { return renewQueue[J]{limit: minWorkers} }

// len returns the number of renewals waiting for a worker.
func (q *renewQueue[J]) len() int { return len(q.jobs) - q.head }

// push queues j and returns how many workers to start: as many as make
// the workers as many as the renewals queued, within the limit.
func (q *renewQueue[J]) push(j J, now time.Time) int {
	if q.len() == 0 {
		q.seen, q.progress = q.taken, now // the stall clock starts
	}
	q.jobs = append(q.jobs, j)
	return q.spawn()
}

// spawn counts in the workers to start while fewer run than renewals are
// queued and the limit allows, and returns how many.
func (q *renewQueue[J]) spawn() int {
	n := 0
	for q.workers < min(q.len(), q.limit) {
		q.workers++
		n++
	}
	return n
}

// unstall raises the limit of workers, and returns how many to start, when
// the queue has made no progress for stallCheck while every allowed worker
// was busy. A queue that has just filled has not stalled: its workers have
// had no time to take anything yet.
func (q *renewQueue[J]) unstall(now time.Time) int {
	if q.taken != q.seen {
		q.seen, q.progress = q.taken, now
		return 0
	}
	if now.Sub(q.progress) < stallCheck || q.workers < q.limit || q.limit >= maxWorkers {
		return 0
	}
	q.limit = min(2*q.limit, maxWorkers)
	q.progress = now
	return q.spawn()
}

// take returns the next renewal for a worker; when none is queued it
// reports false and counts the worker out, as it then exits.
func (q *renewQueue[J]) take() (J, bool) {
	var j J
	if q.len() == 0 {
		q.workers--
		if q.workers == 0 {
			q.limit = minWorkers
		}
		return j, false
	}
	j, q.jobs[q.head] = q.jobs[q.head], j
	q.head++
	if q.head == len(q.jobs) {
		q.jobs, q.head = q.jobs[:0], 0
	}
	q.taken++
	return j, true
}
