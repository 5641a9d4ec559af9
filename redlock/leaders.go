package redlock

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
)

// readBatchScript is readScript over many keys: it replies {pttl, value}
// for KEYS[1], then for KEYS[2], and so on; value is false (nil) when the
// key is missing, or holds no string.
var readBatchScript = redis.NewScript(`
local out = {}
for j = 1, #KEYS do
  local v = redis.pcall('GET', KEYS[j])
  if type(v) == 'table' then
    v = false
  end
  out[2*j-1] = redis.call('PTTL', KEYS[j])
  out[2*j] = v
end
return out
`)

// observedBatch is one node's reply to readBatchScript, by key.
type observedBatch []observed

// status is missing: a read holds nothing, and counts as an answer.
func (observedBatch) status() status { return missing }

// Leaders reports the holder of each election as [Backend.Leader] does, from
// one readBatchScript call per node for up to maxBatch elections (a round
// per maxBatch), rather than a call per election: reading a partition
// group's 64 holders, or its member list, costs each node one request. It
// implements [backend.BatchReader].
func (b *Backend) Leaders(ctx context.Context, elections []string) ([]backend.Holder, []error) {
	holders, errs := make([]backend.Holder, len(elections)), make([]error, len(elections))
	var keys []string
	var at []int // the index in elections of each key
	for i, e := range elections {
		if err := b.check(e); err != nil {
			errs[i] = err
			continue
		}
		keys, at = append(keys, b.lockKey(e)), append(at, i)
	}
	for lo := 0; lo < len(keys); lo += maxBatch {
		hi := min(lo+maxBatch, len(keys))
		chunk := keys[lo:hi]
		r := startRound(ctx, b, nil, func(ctx context.Context, cl redis.UniversalClient, _ int) (observedBatch, error) {
			return parseObservedBatch(readBatchScript.Run(ctx, cl, chunk).Slice())
		})
		got, t := r.collect(ctx, nil)
		for j, i := range at[lo:hi] {
			if err := ctx.Err(); err != nil {
				errs[i] = err
				continue
			}
			obs := make([]*observed, len(got))
			for n, g := range got {
				if g != nil && g.err == nil && j < len(g.val) {
					obs[n] = &g.val[j]
				}
			}
			holders[i], errs[i] = b.holder(elections[i], obs, t)
		}
	}
	return holders, errs
}

// holder decides the holder of election from the nodes' observations of its
// key (nil for a node that failed or did not answer) and the round's tally:
// the value a quorum agrees on, as [Backend.Leader] describes.
func (b *Backend) holder(election string, obs []*observed, t tally) (backend.Holder, error) {
	q := b.quorum
	pttls := make(map[string][]time.Duration)
	for _, o := range obs {
		if o != nil && o.status() == no {
			pttls[o.value] = append(pttls[o.value], o.pttl)
		}
	}
	best, most := "", 0
	for v, p := range pttls {
		if len(p) > most {
			best, most = v, len(p)
		}
	}
	if most < q {
		if most+t.nodes-t.answered() >= q {
			return backend.Holder{}, fmt.Errorf("redlock: leader %q: %d of %d nodes answered, too few to tell: %s", election, t.answered(), t.nodes, t.nodeErr())
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

// parseObservedBatch reads readBatchScript's reply: a {pttl, value or nil}
// pair per key.
func parseObservedBatch(v []any, err error) (observedBatch, error) {
	if err != nil {
		return nil, err
	}
	if len(v)%2 != 0 {
		return nil, fmt.Errorf("batched read script replied %d values; want a pair per key", len(v))
	}
	out := make(observedBatch, len(v)/2)
	for j := range out {
		o, err := parseObserved(v[2*j:2*j+2], nil)
		if err != nil {
			return nil, err
		}
		out[j] = o
	}
	return out, nil
}
