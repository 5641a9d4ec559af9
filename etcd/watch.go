package etcd

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
)

// Watch calls fn with the holder of election (the zero [backend.Holder]
// when there is none), then each time the holder changes, until ctx ends
// (it returns ctx.Err()) or the watch fails. It reads the candidates once
// and then follows one etcd watch over them; it never polls. Unlike
// upstream's Observe it reports an election becoming leaderless. The TTL of
// reported holders is 0 (unknown).
func (b *Backend) Watch(ctx context.Context, election string, fn func(backend.Holder)) error {
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("etcd: watch: %w", err)
	}
	if err := b.usable("watch", election); err != nil {
		return err
	}
	dir := b.electionDir(election)
	key, opts := candidateRange(dir)
	resp, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return b.cli.Get(ctx, key, opts...)
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("etcd: watch %q: %w", election, err)
	}
	cands := make(map[string]*mvccpb.KeyValue)
	for _, kv := range resp.Kvs {
		if isCandidate(dir, kv.Key) {
			cands[string(kv.Key)] = kv
		}
	}
	last := holderOf(election, cands)
	fn(last)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key, opts = candidateRange(dir, clientv3.WithRev(resp.Header.Revision+1))
	wch := b.cli.Watch(wctx, key, opts...)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.done:
			return fmt.Errorf("etcd: watch %q: %w", election, backend.ErrClosed)
		case wr, ok := <-wch:
			if !ok {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("etcd: watch %q: watch channel closed", election)
			}
			if err := wr.Err(); err != nil {
				return fmt.Errorf("etcd: watch %q: %w", election, err)
			}
			for _, ev := range wr.Events {
				if !isCandidate(dir, ev.Kv.Key) {
					continue
				}
				if ev.Type == mvccpb.DELETE {
					delete(cands, string(ev.Kv.Key))
				} else {
					cands[string(ev.Kv.Key)] = ev.Kv
				}
			}
			if h := holderOf(election, cands); h != last {
				last = h
				fn(h)
			}
		}
	}
}

// holderOf returns the holder among cands: the lowest create revision.
func holderOf(election string, cands map[string]*mvccpb.KeyValue) backend.Holder {
	var first *mvccpb.KeyValue
	for _, kv := range cands {
		if first == nil || kv.CreateRevision < first.CreateRevision {
			first = kv
		}
	}
	if first == nil {
		return backend.Holder{}
	}
	return backend.Holder{Election: election, Identity: string(first.Value), Token: uint64(first.CreateRevision)}
}
