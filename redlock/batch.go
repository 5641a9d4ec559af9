package redlock

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxBatch bounds the keys of one batched renewal call, so that one script
// holds a Redis node for a few milliseconds at most.
const maxBatch = 1000

// Coalesced renewals. When every client is a single Redis server, the
// renewals of all leases held through one Backend share calls: the Renew
// calls that arrive while a batch is on the wire are sent together as one
// renewBatchScript call per node (group commit), and each call is topped
// up, to maxBatch keys, with the Backend's idle leases whose last renewal
// is older than a sixth of their TTL. Such a lease's next Renew succeeds
// without a request when that piggy-backed renewal was sent after the one
// its previous Renew used and less than a sixth of its TTL ago; its
// Deadline moved when the batch's quorum answered. Riders leave the leases
// of a Backend with one Deadline, so an Elector, which renews RenewInterval
// after the proof behind the Deadline, renews them together again: a
// process holding many leases thus sends about one call per node per 1,000
// leases per renew interval.
//
// Each lease's outcome is its own: its Deadline counts from the send time
// of the batch that confirmed it, and a batch in which a quorum no longer
// holds a lease closes its Lost channel, whether the lease asked for the
// renewal or was piggy-backed.

// errBatchReply is a node's reply to a batch that does not hold one answer
// per key.
var errBatchReply = errors.New("batched renewal: reply does not hold one answer per key")

// renewBatchScript is renewScript over many keys: KEYS[j] is a lock key and
// ARGV[2j-1], ARGV[2j] its lease id prefix and TTL in ms. It replies, by
// key, 1 when the key was ours and now expires in its TTL, 0 when it holds
// another value (or is not a string), -1 when it is missing; it never re-creates a key.
var renewBatchScript = redis.NewScript(`
local out = {}
for j = 1, #KEYS do
  local v = redis.pcall('GET', KEYS[j])
  local id = ARGV[2*j-1]
  if type(v) == 'table' then
    out[j] = 0
  elseif not v then
    out[j] = -1
  elseif string.sub(v, 1, #id) == id then
    redis.call('PEXPIRE', KEYS[j], ARGV[2*j])
    out[j] = 1
  else
    out[j] = 0
  end
end
return out
`)

// batcher queues the Renew calls of a Backend's leases and sends them in
// batches, one batch on the wire at a time.
type batcher struct {
	b *Backend

	mu      sync.Mutex
	pending []*renewal
	busy    bool // a sender goroutine runs
}

// renewal is one lease's part in a batch: its replies, by node, as a round
// that Renew collects like any other.
type renewal struct {
	l      *lease
	ttlArg string
	r      *round[answer]
	after  []<-chan struct{} // the lease's latest requests, by node
	// deadline is the lease's Deadline when the renewal was queued.
	deadline time.Time
	sent     time.Time // set before the batch's requests start
}

// newRenewal returns a renewal for l whose round is fed by a batch.
func newRenewal(l *lease, ttlArg string) *renewal {
	n := len(l.b.clients)
	l.skipped = nil // the batch reaches every node, and may restore the key there
	r := &round[answer]{b: l.b, replies: make([]*reply[answer], n), replied: make(chan int, n), bound: l.b.renewBound(time.Now(), l.deadline)}
	for i := range r.replies {
		r.replies[i] = &reply[answer]{done: make(chan struct{})}
	}
	return &renewal{l: l, ttlArg: ttlArg, r: r, after: l.last, deadline: l.deadline}
}

// set records node i's reply and announces it.
func (rn *renewal) set(i int, v answer, err error) {
	rep := rn.r.replies[i]
	rep.val, rep.err = v, err
	rn.r.announce(i)
}

// canBatch reports whether every client is a single Redis server, on which
// one script may touch keys of any hash slot.
func canBatch(clients []redis.UniversalClient) bool {
	for _, c := range clients {
		if _, ok := c.(*redis.Client); !ok {
			return false
		}
	}
	return true
}

// renew queues l's renewal (l.mu held by the caller) and returns it; the
// batch it joins is sent once the one on the wire, if any, has finished.
func (bt *batcher) renew(l *lease, ttlArg string) *renewal {
	rn := newRenewal(l, ttlArg)
	bt.mu.Lock()
	bt.pending = append(bt.pending, rn)
	start := !bt.busy
	bt.busy = true
	bt.mu.Unlock()
	if start && !bt.b.spawn(bt.send) {
		bt.mu.Lock()
		bt.busy = false
		bt.pending = nil
		bt.mu.Unlock()
		for i := range rn.r.replies {
			rn.set(i, 0, errStopped)
		}
	}
	return rn
}

// send sends the pending renewals, maxBatch at a time, until none is left.
func (bt *batcher) send() {
	for {
		bt.mu.Lock()
		n := min(len(bt.pending), maxBatch)
		if n == 0 {
			bt.busy = false
			bt.mu.Unlock()
			return
		}
		batch := bt.pending[:n:n]
		bt.pending = bt.pending[n:]
		if len(bt.pending) == 0 {
			bt.pending = nil
		}
		bt.mu.Unlock()
		rider := bt.b.riders(maxBatch - len(batch))
		bt.flush(batch, rider)
	}
}

// riders returns up to max idle leases of b worth renewing early (their
// last renewal is older than a sixth of their TTL, and their earlier
// requests have finished), each locked; the caller settles and unlocks
// them. A rider's Deadline, Renew and Release wait until its batch has
// decided it, which RequestTimeout bounds.
func (b *Backend) riders(max int) []*lease {
	if max <= 0 {
		return nil
	}
	now := time.Now()
	var out []*lease
	b.mu.Lock()
	defer b.mu.Unlock()
	for l := range b.leases {
		if len(out) == max {
			break
		}
		if !l.mu.TryLock() {
			continue // renewing, releasing or in another batch
		}
		if l.gone || !now.Before(l.deadline) || now.Sub(l.renewed) < l.ttl/6 || !settled(l.last) {
			l.mu.Unlock()
			continue
		}
		out = append(out, l)
	}
	return out
}

// settled reports whether every channel in chs is closed.
func settled(chs []<-chan struct{}) bool {
	for _, c := range chs {
		select {
		case <-c:
		default:
			return false
		}
	}
	return true
}

// flush sends one batch: the queued renewals and the riders, one script
// call per node. It returns once a quorum of nodes has answered or timed
// out, so that a slow minority does not hold up the next batch; each rider
// is settled, and unlocked, as soon as its outcome is decided, as Renew
// does (a node that still may report the key missing is restored later).
func (bt *batcher) flush(batch []*renewal, rider []*lease) {
	all := make([]*renewal, 0, len(batch)+len(rider))
	all = append(all, batch...)
	for _, l := range rider {
		all = append(all, newRenewal(l, strconv.FormatInt(l.ttl.Milliseconds(), 10)))
	}
	keys := make([]string, len(all))
	args := make([]any, 0, 2*len(all))
	for j, rn := range all {
		keys[j] = rn.l.key
		args = append(args, rn.l.id, rn.ttlArg)
	}
	sent := time.Now()
	var latest time.Time
	for _, rn := range all {
		rn.sent = sent
	}
	for _, rn := range batch {
		if rn.deadline.After(latest) {
			latest = rn.deadline
		}
	}
	// The batch waits for replies as long as one of its queued leases can
	// still use them (see renewBound), each queued Renew for as long as its
	// own ctx allows; a rider, whose lease is locked meanwhile, waits
	// RequestTimeout (see settleRider). Close ends the wait.
	b := bt.b
	ctx, cancel := context.WithTimeout(b.life, b.renewBound(sent, latest))
	run := counted(b, func(ctx context.Context, cl redis.UniversalClient, _ int) ([]int64, error) {
		return renewBatchScript.Run(ctx, cl, keys, args...).Int64Slice()
	})
	quorum := make(chan struct{})
	var finished atomic.Int32
	finish := func(i int, vals []int64, err error) {
		for j, rn := range all {
			var v int64
			if len(vals) == len(all) { // also from a node in its restart delay: a missing key is put back
				v = vals[j]
			}
			rn.set(i, answer(v), err)
		}
		k := int(finished.Add(1))
		if k == b.quorum {
			close(quorum)
		}
		if k == len(b.clients) {
			cancel()
		}
	}
	for i, cl := range b.clients {
		call := func() {
			for _, rn := range all {
				<-rn.after[i]
			}
			vals, err := run(ctx, cl, i)
			if err == nil && len(vals) != len(all) {
				err = errBatchReply
			}
			finish(i, vals, err)
		}
		if !b.onNode(i, call) {
			finish(i, nil, errStopped)
		}
	}
	<-quorum
	riders := all[len(batch):]
	if len(riders) == 0 {
		return
	}
	settle := func() {
		for _, rn := range riders {
			rn.settleRider()
		}
	}
	if !b.spawn(settle) {
		settle()
	}
}

// settleRider applies a rider's round to its lease once it is decided, as
// Renew would, and unlocks the lease. It waits RequestTimeout from the
// send time at most: a rider is an early renewal the lease does not need
// yet, and its lock holds up the lease's own Renew, Deadline and Release.
func (rn *renewal) settleRider() {
	l := rn.l
	defer l.mu.Unlock()
	ctx, cancel := context.WithDeadline(context.Background(), rn.sent.Add(l.b.cfg.requestTimeout))
	defer cancel()
	_, t := rn.r.collect(ctx, l.b.decideRenew)
	if err := l.settle(ctx, rn.sent, rn.r, t, rn.ttlArg); err == nil && rn.sent.After(l.renewed) {
		l.renewed = rn.sent
	}
}

// renewBatched is Renew's request on a batching Backend, l.mu held: it
// succeeds at once when a batch renewed the lease, as a rider, after the
// renewal the previous Renew used and less than a sixth of the TTL ago;
// otherwise it queues the renewal and settles the reply like Renew's own
// round.
func (l *lease) renewBatched(ctx context.Context, start time.Time, ttlArg string) error {
	if l.renewed.After(l.used) && start.Sub(l.renewed) < l.ttl/6 {
		l.used = l.renewed
		return nil
	}
	rn := l.b.batch.renew(l, ttlArg)
	_, t := rn.r.collect(ctx, l.b.decideRenew)
	if t.yes == 0 {
		return l.settle(ctx, start, rn.r, t, ttlArg)
	}
	// A node confirmed, so the batch was sent and its send time is set.
	err := l.settle(ctx, rn.sent, rn.r, t, ttlArg)
	if err == nil {
		l.renewed, l.used = rn.sent, rn.sent
	}
	return err
}
