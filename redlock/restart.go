package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Delayed restarts, enforced by the client (see the package documentation,
// # Safety). A node that restarted without persistence has forgotten every
// lock it granted; Redlock stays safe only if such a node takes part in no
// quorum until every lock it may have granted has expired, a TTL after it
// came back. The Redis documentation asks operators to delay restarts; a
// Backend instead leaves a node out of every quorum until it has been up
// for the restart delay (the longest TTL the Backend campaigned with, or
// [Options.RestartDelay]).
//
// A restart closes every connection to the node, so a Backend counts the
// connections each client dials (a go-redis dial hook, one atomic add per
// new connection). Before a node's reply counts toward a quorum, the
// Backend makes sure it has asked the node, over the connections dialled so
// far, for INFO server (its run_id and uptime_in_seconds); when a request
// redialled (the node may have restarted under it), the node is asked again
// before its reply counts. So INFO costs one round trip per node when a
// Backend first uses it and after each reconnection, none per round.

// errQuarantined is the reply error of a node that restarted less than the
// restart delay ago: its reply does not count toward a quorum.
var errQuarantined = errors.New("restarted recently")

// quarantined is the reply error of a node in its restart delay.
type quarantined struct {
	left  time.Duration // until the node counts again
	runID string
}

func (q *quarantined) Error() string {
	return fmt.Sprintf("node %.8s… %v, not counted toward a quorum for %v more (Options.RestartDelay)",
		q.runID, errQuarantined, q.left.Round(time.Millisecond))
}

func (q *quarantined) Unwrap() error { return errQuarantined }

// restarts tracks, per node, the connections dialled and the server's start
// as last checked. It is nil when [Options.NoRestartDelay] is set.
type restarts struct {
	base    time.Time     // the clock's origin: times below are ns since base
	delay   time.Duration // Options.RestartDelay; 0: the longest TTL
	longest atomic.Int64  // the longest Candidate.TTL campaigned with, in ns
	nodes   []*nodeCheck
}

// nodeCheck is one node's restart state.
type nodeCheck struct {
	dialled atomic.Uint64 // connections dialled to the node so far
	checked atomic.Uint64 // 1 + dialled as of the last check; 0 before any
	started atomic.Int64  // the server's start as last checked, ns since base
	turn    chan struct{} // holds a token while a check runs: one at a time
	runID   string        // the server's run_id as last checked; under turn
}

// dialCounter is a go-redis hook that counts the connections a client
// dials.
type dialCounter struct{ n *atomic.Uint64 }

func (h dialCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err == nil {
			h.n.Add(1)
		}
		return c, err
	}
}

func (dialCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// newRestarts hooks a dial counter into every client.
func newRestarts(clients []redis.UniversalClient, delay time.Duration) *restarts {
	r := &restarts{base: time.Now(), delay: delay, nodes: make([]*nodeCheck, len(clients))}
	for i, cl := range clients {
		r.nodes[i] = &nodeCheck{turn: make(chan struct{}, 1)}
		cl.AddHook(dialCounter{&r.nodes[i].dialled})
	}
	return r
}

// noteTTL records a Candidate.TTL campaigned with.
func (r *restarts) noteTTL(ttl time.Duration) {
	for {
		old := r.longest.Load()
		if int64(ttl) <= old || r.longest.CompareAndSwap(old, int64(ttl)) {
			return
		}
	}
}

// now returns the time on the restarts' monotonic clock.
func (r *restarts) now() int64 { return int64(time.Since(r.base)) }

// counted wraps the node function of a round whose replies count toward a
// quorum: a node's reply keeps its value but carries an error (so it counts
// as failed) while the node is in its restart delay or could not be
// checked. When the request went over a connection dialled since the
// check, the node is checked again after it: a server keeps its run_id for
// its whole life, so an unchanged run_id means the reply came from the
// server checked before; a new one starts the node's restart delay.
func counted[T any](b *Backend, fn func(context.Context, redis.UniversalClient, int) (T, error)) func(context.Context, redis.UniversalClient, int) (T, error) {
	r := b.restarts
	if r == nil {
		return fn
	}
	return func(ctx context.Context, cl redis.UniversalClient, i int) (T, error) {
		n := r.nodes[i]
		dialled, cerr := r.check(ctx, cl, n)
		v, err := fn(ctx, cl, i)
		if err != nil {
			return v, err
		}
		if cerr == nil && n.dialled.Load() != dialled {
			_, cerr = r.check(ctx, cl, n)
		}
		return v, cerr
	}
}

// check makes sure node n was checked over the connections dialled so far
// and returns their number, with a *quarantined error while the node is in
// its restart delay.
func (r *restarts) check(ctx context.Context, cl redis.UniversalClient, n *nodeCheck) (uint64, error) {
	dialled := n.dialled.Load()
	if n.checked.Load() != dialled+1 {
		var err error
		if dialled, err = r.recheck(ctx, cl, n); err != nil {
			return dialled, err
		}
	}
	delay := r.delay
	if delay == 0 {
		delay = time.Duration(r.longest.Load())
	}
	if left := time.Duration(n.started.Load() + int64(delay) - r.now()); left > 0 {
		return dialled, &quarantined{left: left, runID: n.id()}
	}
	return dialled, nil
}

// recheck asks node n for its run_id and uptime, records its start, and
// returns the connections dialled before it asked: those its answer
// covers. A server with a new run_id, or seen for the first time, started
// as serverStart reckons. While connections are dialled during the
// question (a pool growing under a burst of requests), it asks again, at
// most three times in all, to cover them too; what the last answer leaves
// uncovered is checked again before a reply over it counts (see counted).
func (r *restarts) recheck(ctx context.Context, cl redis.UniversalClient, n *nodeCheck) (uint64, error) {
	select {
	case n.turn <- struct{}{}:
		defer func() { <-n.turn }()
	case <-ctx.Done():
		return n.dialled.Load(), fmt.Errorf("checking for a restart: %w", ctx.Err())
	}
	var dialled uint64
	for range 3 {
		dialled = n.dialled.Load()
		if n.checked.Load() == dialled+1 {
			return dialled, nil
		}
		info, err := cl.Info(ctx, "server").Result()
		if err != nil {
			return dialled, fmt.Errorf("checking for a restart: %w", err)
		}
		answered := r.now()
		runID, uptime, err := parseServerInfo(info)
		if err != nil {
			return dialled, err
		}
		if runID != n.runID || n.checked.Load() == 0 {
			n.runID = runID
			n.started.Store(serverStart(answered, uptime))
		}
		n.checked.Store(dialled + 1)
	}
	return dialled, nil
}

// serverStart returns the latest time a server can have started that
// reported uptime (its uptime_in_seconds) in a reply that arrived at
// answered. Redis counts uptime as the difference of two whole-second
// wall-clock readings, its clock's second now and at its start, so uptime
// reads 1 s as soon as the second turns, however recently the server
// started: the server has been up for more than uptime - 1 s, not for
// uptime, when it answers, and it answered before the reply arrived.
func serverStart(answered int64, uptime time.Duration) int64 {
	return answered - int64(uptime) + int64(time.Second)
}

// id returns the node's run_id as last checked, or "" while a check runs.
func (n *nodeCheck) id() string {
	select {
	case n.turn <- struct{}{}:
		defer func() { <-n.turn }()
		return n.runID
	default:
		return ""
	}
}

// parseServerInfo reads run_id and uptime_in_seconds from INFO server.
func parseServerInfo(info string) (runID string, uptime time.Duration, err error) {
	secs := int64(-1)
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case !ok:
		case k == "run_id":
			runID = v
		case k == "uptime_in_seconds":
			secs, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if runID == "" || secs < 0 {
		return "", 0, fmt.Errorf("checking for a restart: INFO server has no run_id or uptime_in_seconds")
	}
	return runID, time.Duration(secs) * time.Second, nil
}

// quarantineWait reads an acquire round that too few nodes answered: when
// the nodes in their restart delay would have made up a quorum with those
// that answered, it returns how long until the first of them counts again.
func quarantineWait[T verdict](got []*reply[T], q int, t tally) (time.Duration, bool) {
	var waits []time.Duration
	for _, g := range got {
		var qe *quarantined
		if g != nil && errors.As(g.err, &qe) {
			waits = append(waits, qe.left)
		}
	}
	if len(waits) == 0 || t.answered()+len(waits) < q {
		return 0, false
	}
	return slices.Min(waits), true
}

// lostKey reports whether a renew reply says the key is missing on its
// node, counted or not (a node in its restart delay gets the lease back
// too, so that it holds it when it counts again).
func lostKey(r *reply[answer]) bool {
	return r.val.status() == missing && (r.err == nil || errors.Is(r.err, errQuarantined))
}

// raiseCounters raises the election's counter to token, in the background,
// on every node of a winning acquire round that did not grant the lease in
// a counted reply (it was held by the predecessor whose deletion is still
// in flight, failed, or is in its restart delay), each after that node's
// acquire request has finished. A token is otherwise kept only by the
// acquiring quorum: with a bare quorum, a minority of it restarting empty
// would leave the token on too few nodes, and the next winner, counting on
// the others, could mint the same token again. A node that grants the
// lease late, with a counted reply, has INCRed its counter and needs
// nothing.
func (b *Backend) raiseCounters(key, id string, token uint64, value string, r *round[acquired]) {
	keys := []string{key, key + counterSuffix}
	tok := strconv.FormatUint(token, 10)
	for i, rep := range r.replies {
		if r.skipped(i) {
			continue // the lease's release sends it nothing; its next acquire's floor catches it up
		}
		select {
		case <-rep.done:
			if rep.status() == yes {
				continue // the common case: no goroutine
			}
		default:
		}
		cl := b.clients[i]
		r.whenDone(i, func() { // no goroutine waits for a slow node
			if rep.status() == yes {
				return
			}
			b.spawn(func() {
				ctx, cancel := context.WithTimeout(context.Background(), b.cfg.requestTimeout)
				defer cancel()
				writeBackScript.Run(ctx, cl, keys, id, tok, value)
			})
		})
	}
}

// checkNodes checks every node for a restart in the background, so that
// the first round does not wait for it.
func (b *Backend) checkNodes() {
	for i, cl := range b.clients {
		b.spawn(func() {
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.requestTimeout)
			defer cancel()
			_, _ = b.restarts.check(ctx, cl, b.restarts.nodes[i])
		})
	}
}
