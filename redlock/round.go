package redlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// errStopped is the reply of a node call that could not start because the
// Backend has shut down.
var errStopped = errors.New("backend stopped")

// errSkipped is the reply of a node that an acquire round left out because
// the node was still busy with an earlier request of the same election
// (see [Backend.lagging]): nothing was sent to it.
var errSkipped = errors.New("skipped: still busy with the previous term's request")

// status is what one node's reply to a round says, in the terms every
// round counts.
type status int8

const (
	failed  status = iota // the request failed, timed out or never started
	yes                   // the node did what the round asked of it
	no                    // the key holds a value that is not ours
	missing               // the key does not exist
)

// verdict is a typed node reply that a [round] can count.
type verdict interface{ status() status }

// answer is the integer reply of the scripts that answer 1 (done), 0 (the
// key holds another value) or -1 (the key is missing).
type answer int64

func (a answer) status() status {
	switch a {
	case 1:
		return yes
	case 0:
		return no
	}
	return missing
}

// answerOf types the reply of a script that answers 1, 0 or -1.
func answerOf(v int64, err error) (answer, error) { return answer(v), err }

// reply is one node's answer within a round.
type reply[T verdict] struct {
	done chan struct{} // closed once val and err are set
	val  T
	err  error
	// then holds what runs once the reply is in (see round.whenDone);
	// guarded by the round's mu.
	then []func()
}

func (r *reply[T]) status() status {
	if r.err != nil {
		return failed
	}
	return r.val.status()
}

// tally counts the replies of a round by status. It is the one place where
// replies are counted; rounds decide from it.
type tally struct {
	nodes   int // nodes in the round
	yes     int
	no      int
	missing int
	failed  int
	// fails describes each failed node, "<address>: <cause>", for messages.
	fails []string
}

// add counts one reply; why describes a failure.
func (t *tally) add(s status, why func() string) {
	switch s {
	case yes:
		t.yes++
	case no:
		t.no++
	case missing:
		t.missing++
	default:
		t.failed++
		t.fails = append(t.fails, why())
	}
}

// answered is the number of nodes that replied without an error.
func (t tally) answered() int { return t.yes + t.no + t.missing }

// pending is the number of nodes that have not replied yet.
func (t tally) pending() int { return t.nodes - t.answered() - t.failed }

// nodeErr describes the failed nodes for an error message, each with its
// address and last underlying error.
func (t tally) nodeErr() string {
	if len(t.fails) == 0 {
		return "no node replied in time"
	}
	return strings.Join(t.fails, "; ")
}

// round is one request sent to every node in parallel, with its typed
// replies.
type round[T verdict] struct {
	b       *Backend
	replies []*reply[T]       // by node
	replied chan int          // node indexes, as their replies come in
	after   []<-chan struct{} // what each node's request was ordered after; may be nil
	skip    []bool            // nodes sent nothing (errSkipped); may be nil
	// bound is how long the requests may take: RequestTimeout, or for a
	// renewal the time left before the lease's Deadline (see renewBound).
	bound time.Duration
	mu    sync.Mutex // guards the replies' then
}

// announce publishes node i's reply, whose val and err are set: its done
// channel closes, collect hears of it, and what waited for it runs, in the
// caller's goroutine.
func (r *round[T]) announce(i int) {
	rep := r.replies[i]
	r.mu.Lock()
	close(rep.done)
	then := rep.then
	rep.then = nil
	r.mu.Unlock()
	r.replied <- i
	for _, f := range then {
		f()
	}
}

// whenDone runs f once node i's reply is in: at once, in the caller's
// goroutine, if it is; otherwise in the goroutine that announces it. f must
// not block. A reply awaited so costs no goroutine, however slow its node.
func (r *round[T]) whenDone(i int, f func()) {
	rep := r.replies[i]
	r.mu.Lock()
	select {
	case <-rep.done:
		r.mu.Unlock()
		f()
		return
	default:
	}
	rep.then = append(rep.then, f)
	r.mu.Unlock()
}

// startRound sends fn to every node in parallel, on the nodes' workers; fn
// gets the node's client and index. The requests share one ctx, derived
// from ctx with a deadline RequestTimeout away (a request ordered after
// another loses the time it waited, which RequestTimeout bounds too). When
// after is not nil, the request to node i is sent only once after[i] is
// closed, so it cannot overtake an earlier request on the node (they travel
// on different connections). The requests go on after collect returns; a
// caller that must order a later request after them passes [round.done] as
// after.
func startRound[T verdict](ctx context.Context, b *Backend, after []<-chan struct{}, fn func(ctx context.Context, cl redis.UniversalClient, node int) (T, error)) *round[T] {
	return startRoundSkip(ctx, b, after, nil, fn)
}

// startRoundSkip is startRound that sends nothing to the nodes i with
// skip[i] set: their replies are errSkipped at once. skip may be nil.
func startRoundSkip[T verdict](ctx context.Context, b *Backend, after []<-chan struct{}, skip []bool, fn func(ctx context.Context, cl redis.UniversalClient, node int) (T, error)) *round[T] {
	return startRoundFor(ctx, b, b.cfg.requestTimeout, after, skip, fn)
}

// startRoundFor is startRoundSkip whose requests are bounded by bound
// instead of RequestTimeout; a bound longer than RequestTimeout also ends
// when Close begins.
func startRoundFor[T verdict](ctx context.Context, b *Backend, bound time.Duration, after []<-chan struct{}, skip []bool, fn func(ctx context.Context, cl redis.UniversalClient, node int) (T, error)) *round[T] {
	n := len(b.clients)
	r := &round[T]{b: b, replies: make([]*reply[T], n), replied: make(chan int, n), after: after, skip: skip, bound: bound}
	rctx, cancel := context.WithTimeout(ctx, bound)
	if bound > b.cfg.requestTimeout {
		// A renewal's requests may outlive its caller's wait (see
		// renewBound): Close ends them.
		stop := context.AfterFunc(b.life, cancel)
		end := cancel
		cancel = func() { stop(); end() }
	}
	var left atomic.Int32
	left.Store(int32(n))
	finish := func(i int, rep *reply[T]) {
		r.announce(i)
		if left.Add(-1) == 0 {
			cancel()
		}
	}
	for i, cl := range b.clients {
		rep := &reply[T]{done: make(chan struct{})}
		r.replies[i] = rep
		if skip != nil && skip[i] {
			rep.err = errSkipped
			finish(i, rep)
			continue
		}
		ok := b.onNode(i, func() {
			if after != nil {
				<-after[i]
			}
			rep.val, rep.err = fn(rctx, cl, i)
			finish(i, rep)
		})
		if !ok {
			rep.err = errStopped
			finish(i, rep)
		}
	}
	return r
}

// done returns, by node, a channel closed when that node's request has
// finished.
func (r *round[T]) done() []<-chan struct{} {
	d := make([]<-chan struct{}, len(r.replies))
	for i, rep := range r.replies {
		d[i] = rep.done
	}
	return d
}

// skipped reports whether node i was left out of the round.
func (r *round[T]) skipped(i int) bool { return r.skip != nil && r.skip[i] }

// chain returns, by node, a channel closed when the latest request sent to
// that node for the round's key has finished: the round's own request, or
// for a node left out of the round, the earlier request it was busy with.
func (r *round[T]) chain() []<-chan struct{} {
	d := r.done()
	for i := range d {
		if r.skipped(i) {
			d[i] = r.after[i]
		}
	}
	return d
}

// collect waits for the replies of the round until decide reports true
// for their tally, every node has replied, or ctx ends. It returns the
// replies that are in, by node (nil for the others), and their tally. The
// requests end by the round's bound through their contexts; when some
// client is of a type that may not honour ctx deadlines on reads, a guard
// timer of twice that (plus 10 ms, for a starved process) stops the wait. A
// nil decide waits for every node.
func (r *round[T]) collect(ctx context.Context, decide func(tally) bool) ([]*reply[T], tally) {
	got := make([]*reply[T], len(r.replies))
	t := tally{nodes: len(r.replies)}
	take := func(i int) {
		got[i] = r.replies[i]
		t.add(got[i].status(), func() string { return r.b.failure(i, got[i].err, r.bound) })
	}
	var guard <-chan time.Time // nil: the requests' contexts bound the wait
	if !r.b.ctxBound {
		timer := time.NewTimer(2*r.bound + 10*time.Millisecond)
		defer timer.Stop()
		guard = timer.C
	}
	for range r.replies {
		select {
		case i := <-r.replied:
			take(i)
			if decide != nil && decide(t) {
				return got, t
			}
		case <-ctx.Done():
			return got, t
		case <-guard:
			// A starved process may see the timer and the replies at
			// once: take the replies that are in.
			for {
				select {
				case i := <-r.replied:
					take(i)
				default:
					return got, t
				}
			}
		}
	}
	return got, t
}
