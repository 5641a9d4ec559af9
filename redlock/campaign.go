package redlock

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
)

// never stands for "not within any wait worth a timer".
const never = time.Duration(math.MaxInt64)

// Campaign blocks until candidate c holds its election at a quorum of the
// nodes, then returns the lease; see the package documentation for the
// algorithm. While another candidate holds the election it sleeps until the
// holder's keys can have expired (the remaining PTTL the nodes reported,
// plus a few milliseconds of jitter) and wakes at once when a release is
// announced on the nodes.
//
// It returns ctx.Err() when ctx ends first, after sending compare-and-delete
// to every node its last round may have reached. It returns an error wrapping
// [backend.ErrInvalid] for an invalid election name or identity, or a TTL
// below [MinTTL]; [backend.ErrClosed] after Close; and a plain error when too
// few nodes answered to reach a quorum, or the quorum came too late to leave
// any validity (the caller retries).
func (b *Backend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if err := b.check(c.Election); err != nil {
		return nil, err
	}
	if err := backend.ValidateIdentity(c.Identity); err != nil {
		return nil, err
	}
	if c.TTL < MinTTL {
		return nil, fmt.Errorf("redlock: campaign %q: %w: TTL is %v; want at least %v", c.Election, backend.ErrInvalid, c.TTL, MinTTL)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.TTL = ttlMillis(c.TTL)
	key := b.lockKey(c.Election)
	campaign := newCampaignID()
	var w *waiter // subscribed to releases once the election is found held
	defer func() {
		if w != nil {
			b.notify.unregister(w)
		}
	}()

	splits := 0
	for attempt := 0; ; attempt++ {
		if w != nil {
			w.drain()
		}
		r := b.acquire(ctx, key, leaseID(campaign, attempt), c)
		switch {
		case r.lease != nil:
			return r.lease, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case r.err != nil:
			return nil, fmt.Errorf("redlock: campaign %q: %w", c.Election, r.err)
		case w == nil:
			// Held: subscribe to its releases, then try once more at
			// once, so a release between the two is not missed.
			var err error
			if w, err = b.notify.register(ctx, key, campaign); err != nil {
				return nil, err
			}
			continue
		}
		wake := w.ch
		var wait time.Duration
		if r.split {
			// Rival candidates split the nodes and are cleaning up: back
			// off at random, deaf to their release notifications, so the
			// next round is not a tie again.
			splits++
			wait = time.Duration(rand.Int64N(int64(min(time.Millisecond<<min(splits, 6), c.TTL/4)) + 1))
			wake = nil
		} else {
			splits = 0
			wait = r.wait
			if wait == never || wait > c.TTL {
				wait = c.TTL // a holder without expiry: look again after a TTL
			}
			wait += time.Millisecond + time.Duration(rand.Int64N(int64(min(c.TTL/50, 10*time.Millisecond))+1))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-b.done:
			t.Stop()
			return nil, fmt.Errorf("redlock: campaign %q: %w", c.Election, backend.ErrClosed)
		case <-wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// acquireResult is the outcome of one acquire round.
type acquireResult struct {
	lease *Lease
	err   error         // too few nodes answered, or a late quorum
	wait  time.Duration // held: when a quorum of nodes can be free
	split bool          // held, but by no single holder on a quorum
}

// acquire runs one round of the algorithm: acquireScript on every node, a
// quorum within validity, the fencing write-back when the nodes' counters
// disagree, and compare-and-delete everywhere after a failure.
func (b *Backend) acquire(ctx context.Context, key, id string, c backend.Candidate) acquireResult {
	n, q := len(b.clients), b.quorum
	counter := key + counterSuffix
	ttlArg := strconv.FormatInt(c.TTL.Milliseconds(), 10)
	start := time.Now()
	calls, replied := b.round(ctx, nil, func(ctx context.Context, cl redis.UniversalClient) (any, error) {
		return acquireScript.Run(ctx, cl, []string{key, counter}, id, c.Identity, ttlArg).Int64Slice()
	})
	got := b.collect(ctx, calls, replied, func(got []*call) bool {
		// Wait for every node unless the round is decided: a quorum is
		// ours, or one rival holds one (failed nodes alone do not decide
		// it, so that the wait below sees the holder's PTTLs).
		ok, held := 0, 0
		for _, g := range got {
			switch {
			case g == nil || g.err != nil:
			case g.val.([]int64)[0] == 1:
				ok++
			default:
				held++
			}
		}
		return ok >= q || held >= q
	})
	elapsed := time.Since(start)

	var ok, held int
	var firstErr error
	var tokens []uint64
	free := make([]time.Duration, 0, n) // when each node can be free for us
	for _, g := range got {
		switch {
		case g == nil:
			free = append(free, never)
		case g.err != nil:
			free = append(free, never)
			if firstErr == nil {
				firstErr = g.err
			}
		case g.val.([]int64)[0] == 1:
			ok++
			tokens = append(tokens, uint64(g.val.([]int64)[1]))
			free = append(free, 0)
		default:
			held++
			pttl := g.val.([]int64)[1]
			if pttl < 0 {
				free = append(free, never)
			} else {
				free = append(free, time.Duration(pttl)*time.Millisecond)
			}
		}
	}

	if ok >= q {
		deadline := b.deadline(start, c.TTL)
		if elapsed >= c.TTL-b.cfg.driftFor(c.TTL) {
			b.cleanup(key, id, calls)
			return acquireResult{err: fmt.Errorf("late quorum: %d of %d nodes in %v, past the validity of a %v TTL", ok, n, elapsed, c.TTL)}
		}
		token := slices.Max(tokens)
		agree := 0
		for _, t := range tokens {
			if t == token {
				agree++
			}
		}
		if agree < q {
			if err := b.fence(ctx, key, id, token, c.Identity); err != nil {
				b.cleanup(key, id, calls)
				return acquireResult{err: err}
			}
			if !time.Now().Before(deadline) {
				b.cleanup(key, id, calls)
				return acquireResult{err: fmt.Errorf("late quorum: the fencing write-back ended past the validity of a %v TTL", c.TTL)}
			}
		}
		l := &Lease{b: b, election: c.Election, key: key, id: id, value: encodeValue(id, token, c.Identity), token: token,
			ttl: c.TTL, deadline: deadline, lost: make(chan struct{}), last: calls}
		if !b.track(l) {
			b.cleanup(key, id, calls)
			return acquireResult{err: backend.ErrClosed}
		}
		return acquireResult{lease: l}
	}

	b.cleanup(key, id, calls)
	if ctx.Err() != nil {
		return acquireResult{}
	}
	if ok+held < q {
		return acquireResult{err: fmt.Errorf("quorum unreachable: %d of %d nodes answered, need %d: %s", ok+held, n, q, nodeErr(firstErr))}
	}
	slices.Sort(free)
	r := acquireResult{wait: free[q-1]}
	// A rival can hold a quorum only if at least q nodes are held; fewer
	// means rival candidates split the nodes (or a holder lost some).
	if held < q {
		r.split = true
	}
	return r
}

// fence writes token back to the nodes (fenceScript) and needs a quorum of
// them still holding our lease.
func (b *Backend) fence(ctx context.Context, key, id string, token uint64, identity string) error {
	n, q := len(b.clients), b.quorum
	tok := strconv.FormatUint(token, 10)
	value := encodeValue(id, token, identity)
	calls, replied := b.round(ctx, nil, func(ctx context.Context, cl redis.UniversalClient) (any, error) {
		return fenceScript.Run(ctx, cl, []string{key, key + counterSuffix}, id, tok, value).Int64()
	})
	got := b.collect(ctx, calls, replied, func(got []*call) bool {
		return countInt(got, 1) >= q
	})
	if ok := countInt(got, 1); ok < q {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("fencing write-back reached %d of %d nodes, need %d: %s", ok, n, q, nodeErr(firstErr(got)))
	}
	return nil
}

// cleanup sends compare-and-delete for lease id to every node of an acquire
// round whose reply was not a definite "held by another": those that
// succeeded, failed or had not answered. Each node's delete is sent after
// that node's acquire request has finished, so it cannot overtake it. It
// runs in the background with a fresh context bounded by NodeTimeout.
func (b *Backend) cleanup(key, id string, calls []*call) {
	for i, c := range calls {
		cl := b.clients[i]
		b.spawn(func() {
			<-c.done
			if c.err == nil {
				if v, _ := c.val.([]int64); len(v) > 0 && v[0] == 0 {
					return
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.nodeTimeout)
			defer cancel()
			releaseScript.Run(ctx, cl, []string{key}, id)
		})
	}
}

// countInt counts the replies equal to want.
func countInt(got []*call, want int64) int {
	n := 0
	for _, g := range got {
		if g != nil && g.err == nil && g.val.(int64) == want {
			n++
		}
	}
	return n
}

// firstErr returns the first node error among the replies.
func firstErr(got []*call) error {
	for _, g := range got {
		if g != nil && g.err != nil {
			return g.err
		}
	}
	return nil
}
