package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
)

const (
	// maxTxnRanges is the most elections Leaders reads in one Txn: etcd's
	// default limit on a Txn's operations (--max-txn-ops, 128). A cluster
	// configured below it refuses such a Txn (ErrTooManyOps); Leaders then
	// halves the number until the cluster accepts it, and keeps it for the
	// Backend's later calls.
	maxTxnRanges = 128
	// ttlParallelism bounds the TimeToLive requests in flight for one
	// Leaders call.
	ttlParallelism = 16
)

// Leaders reports the holder of each election as [Backend.Leader] does, from
// one Txn of Range requests per 128 elections (read at one revision) and one
// TimeToLive request per distinct lease among their holders, rather than a
// Get and a TimeToLive per election: the holders of a partition group's 64
// partitions, whose owners share a few leases, cost a handful of requests.
// It implements [backend.BatchReader].
func (b *Backend) Leaders(ctx context.Context, elections []string) ([]backend.Holder, []error) {
	holders, errs := make([]backend.Holder, len(elections)), make([]error, len(elections))
	var at []int // the index in elections of each valid one
	for i, e := range elections {
		if err := backend.ValidateElection(e); err != nil {
			errs[i] = fmt.Errorf("etcd: leader: %w", err)
			continue
		}
		if err := b.usable("leader", e); err != nil {
			errs[i] = err
			continue
		}
		at = append(at, i)
	}
	firsts := make([]*mvccpb.KeyValue, len(elections))
	for lo := 0; lo < len(at); {
		size := int(b.txnRanges.Load())
		chunk := at[lo:min(lo+size, len(at))]
		kvs, err := b.readFirsts(ctx, elections, chunk)
		if errors.Is(err, rpctypes.ErrTooManyOps) && size > 1 {
			b.txnRanges.CompareAndSwap(int64(size), int64(size/2))
			continue
		}
		for j, i := range chunk {
			switch {
			case err != nil && ctx.Err() != nil:
				errs[i] = ctx.Err()
			case err != nil:
				errs[i] = fmt.Errorf("etcd: leader %q: %w", elections[i], err)
			case kvs[j] == nil:
				errs[i] = fmt.Errorf("etcd: leader %q: %w", elections[i], backend.ErrNoLeader)
			default:
				firsts[i] = kvs[j]
			}
		}
		lo += len(chunk)
	}
	ttls := b.leaseTTLs(ctx, firsts)
	for i, kv := range firsts {
		if kv == nil {
			continue
		}
		if _, ok := ttls[kv.Lease]; !ok && kv.Lease != 0 && ctx.Err() != nil {
			errs[i] = ctx.Err() // its TTL was not read, as in Leader
			continue
		}
		holders[i] = backend.Holder{Election: elections[i], Identity: string(kv.Value), Token: uint64(kv.CreateRevision), TTL: ttls[kv.Lease]}
	}
	return holders, errs
}

// readFirsts reads, in one Txn, the first candidate (nil for none) of
// elections[i] for each i in chunk.
func (b *Backend) readFirsts(ctx context.Context, elections []string, chunk []int) ([]*mvccpb.KeyValue, error) {
	ops := make([]clientv3.Op, len(chunk))
	for j, i := range chunk {
		key, opts := candidateRange(b.electionDir(elections[i]))
		ops[j] = clientv3.OpGet(key, opts...)
	}
	resp, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.TxnResponse, error) {
		return b.cli.Txn(ctx).Then(ops...).Commit()
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Responses) != len(chunk) {
		return nil, fmt.Errorf("a Txn of %d ranges answered %d responses", len(chunk), len(resp.Responses))
	}
	out := make([]*mvccpb.KeyValue, len(chunk))
	for j, i := range chunk {
		r := resp.Responses[j].GetResponseRange()
		if r == nil {
			return nil, fmt.Errorf("a Txn of ranges answered a %T", resp.Responses[j].Response)
		}
		out[j] = readQueue(b.electionDir(elections[i]), r.Kvs, "").first
	}
	return out, nil
}

// leaseTTLs reads the time left of each distinct lease of the keys in kvs
// (nil entries are skipped), up to ttlParallelism at once. A lease whose
// TimeToLive fails or has ended is missing from the map: its holders'
// TTL is 0, as in Leader.
func (b *Backend) leaseTTLs(ctx context.Context, kvs []*mvccpb.KeyValue) map[int64]time.Duration {
	ids := make(map[int64]bool)
	for _, kv := range kvs {
		if kv != nil && kv.Lease != 0 {
			ids[kv.Lease] = true
		}
	}
	var mu sync.Mutex
	out := make(map[int64]time.Duration, len(ids))
	sem := make(chan struct{}, ttlParallelism)
	var wg sync.WaitGroup
	for id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.LeaseTimeToLiveResponse, error) {
				return b.cli.TimeToLive(ctx, clientv3.LeaseID(id))
			})
			if err == nil && r.TTL > 0 {
				mu.Lock()
				out[id] = time.Duration(r.TTL) * time.Second
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}
