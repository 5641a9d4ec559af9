package etcd

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
)

// Guard returns the comparison that holds exactly while the term with the
// given token, won on this Backend, is current at the store: the candidate
// key exists with the token as its create revision. Put it in the If of a
// transaction so the writes commit only while the term lasts:
//
//	OnElected: func(ctx context.Context, t elector.Term) {
//		guard, err := b.Guard(t.Election, t.Token)
//		if err != nil {
//			return // the term is already over
//		}
//		resp, err := cli.Txn(ctx).If(guard).Then(clientv3.OpPut("invoices/sent", "42")).Commit()
//		// resp.Succeeded is false if the term ended before the write.
//	}
//
// The comparison is evaluated by etcd atomically with the writes, so a
// paused or partitioned ex-leader's transaction fails instead of
// overwriting its successor's. Guard returns an error wrapping
// [backend.ErrLost] when this Backend does not hold that term (released,
// lost, or never won here).
func (b *Backend) Guard(election string, token uint64) (clientv3.Cmp, error) {
	b.mu.Lock()
	l := b.held[heldKey{election, token}]
	b.mu.Unlock()
	if l == nil {
		return clientv3.Cmp{}, fmt.Errorf("etcd: guard %q token %d: not held by this backend: %w", election, token, backend.ErrLost)
	}
	if err := l.gone("guard"); err != nil {
		return clientv3.Cmp{}, err
	}
	return clientv3.Compare(clientv3.CreateRevision(l.key), "=", l.rev), nil
}
