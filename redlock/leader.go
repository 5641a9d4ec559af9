package redlock

import (
	"context"
	"fmt"
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
	b.warm(ctx)
	r := startRound(ctx, b, nil, func(ctx context.Context, cl redis.UniversalClient, _ int) (observed, error) {
		return parseObserved(readScript.Run(ctx, cl, []string{key}).Slice())
	})
	got, t := r.collect(ctx, nil)
	if err := ctx.Err(); err != nil {
		return backend.Holder{}, err
	}
	obs := make([]*observed, len(got))
	for n, g := range got {
		if g != nil && g.err == nil {
			obs[n] = &g.val
		}
	}
	return b.holder(election, obs, t)
}

// observed is one node's reply to readScript.
type observed struct {
	value string        // "" when the key is missing
	pttl  time.Duration // the key's PTTL, 0 for none
}

// status is no for a key that holds a value (a reader holds nothing) and
// missing otherwise.
func (o observed) status() status {
	if o.value == "" {
		return missing
	}
	return no
}

// parseObserved reads readScript's reply: {pttl, value or nil}.
func parseObserved(v []any, err error) (observed, error) {
	if err != nil {
		return observed{}, err
	}
	if len(v) < 1 {
		return observed{}, fmt.Errorf("read script replied %v", v)
	}
	pttl, _ := v[0].(int64)
	o := observed{pttl: time.Duration(max(pttl, 0)) * time.Millisecond}
	if len(v) > 1 {
		o.value, _ = v[1].(string)
	}
	return o, nil
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
