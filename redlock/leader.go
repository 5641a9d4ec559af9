package redlock

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
)

// Leader reports the holder of election agreed by a quorum of the nodes:
// the same value (lease, token and identity) on at least N/2+1 of them. Its
// TTL is the time until fewer than a quorum of those keys remain, from their
// PTTLs. A lock taken on the same key by another Redlock client (redsync,
// node-redlock) is reported with an empty Identity and Token 0.
//
// It returns an error wrapping [backend.ErrNoLeader] when no quorum agrees
// (including the instant between a winning acquire round and its fencing
// write-back, before the term starts), a plain error when too few nodes
// answered to tell, ctx.Err() when ctx ends first, and [backend.ErrClosed]
// after Close.
func (b *Backend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if err := b.check(election); err != nil {
		return backend.Holder{}, err
	}
	key := b.lockKey(election)
	n, q := len(b.clients), b.quorum
	calls, replied := b.round(ctx, nil, func(ctx context.Context, cl redis.UniversalClient) (any, error) {
		return readScript.Run(ctx, cl, []string{key}).Slice()
	})
	got := b.collect(ctx, calls, replied, nil)
	if err := ctx.Err(); err != nil {
		return backend.Holder{}, err
	}
	pttls := make(map[string][]time.Duration)
	answered := 0
	for _, g := range got {
		if g == nil || g.err != nil {
			continue
		}
		answered++
		r := g.val.([]any)
		v, _ := r[1].(string)
		if v == "" {
			continue
		}
		pttl, _ := r[0].(int64)
		pttls[v] = append(pttls[v], time.Duration(max(pttl, 0))*time.Millisecond)
	}
	best, most := "", 0
	for v, p := range pttls {
		if len(p) > most {
			best, most = v, len(p)
		}
	}
	if most < q {
		if most+n-answered >= q {
			return backend.Holder{}, fmt.Errorf("redlock: leader %q: %d of %d nodes answered, too few to tell: %s", election, answered, n, nodeErr(firstErr(got)))
		}
		return backend.Holder{}, fmt.Errorf("redlock: leader %q: %w", election, backend.ErrNoLeader)
	}
	p := pttls[best]
	slices.Sort(p)
	h := backend.Holder{Election: election, TTL: p[len(p)-q]} // until fewer than q keys remain
	if pv, ok := parseValue(best); ok {
		if pv.token == 0 {
			return backend.Holder{}, fmt.Errorf("redlock: leader %q: %w (a term is starting)", election, backend.ErrNoLeader)
		}
		h.Identity, h.Token = pv.identity, pv.token
	}
	return h, nil
}

// isClosed reports whether Close has begun.
func (b *Backend) isClosed() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}
