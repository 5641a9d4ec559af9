package etcd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
)

// markerPrefix starts the identity of a "migrated" marker (package
// github.com/leaderkit/elector/migrate, MarkerPrefix).
const markerPrefix = "migrated-to-"

// isMarker reports whether kv is a "migrated" marker: a candidate key
// without a lease whose value is a marker identity.
func isMarker(kv *mvccpb.KeyValue) bool {
	return kv.Lease == 0 && strings.HasPrefix(string(kv.Value), markerPrefix)
}

// Mark writes the persistent "migrated" marker of package
// github.com/leaderkit/elector/migrate (it implements migrate.Marker, for
// migrations away from etcd): the candidate key of held, the lease of
// election the caller holds, is detached from its etcd lease and given the
// value identity, in one transaction that checks the key's create revision
// is held's token. A put keeps a key's create revision, so the marker stays
// first in the election's queue for good and outlives the lease: every
// candidate, including concurrency.Election and `etcdctl elect`, waits
// behind it, and Leader reports identity as the holder, its token the
// create revision of the last term. identity starts with "migrated-to-".
// Marking an election that carries the marker succeeds.
func (b *Backend) Mark(ctx context.Context, election string, held backend.Lease, identity string) error {
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("etcd: mark: %w", err)
	}
	if !strings.HasPrefix(identity, markerPrefix) {
		return fmt.Errorf("etcd: mark %q: %w: identity %q; want one starting with %q", election, backend.ErrInvalid, identity, markerPrefix)
	}
	if err := b.usable("mark", election); err != nil {
		return err
	}
	if !time.Now().Before(held.Deadline()) {
		return fmt.Errorf("etcd: mark %q: %w: the lease's deadline has passed", election, backend.ErrLost)
	}
	kvs, err := b.candidates(ctx, election)
	if err != nil {
		return fmt.Errorf("etcd: mark %q: %w", election, err)
	}
	var own *mvccpb.KeyValue
	for _, kv := range kvs {
		if isMarker(kv) {
			return nil
		}
		if uint64(kv.CreateRevision) == held.Token() {
			own = kv
		}
	}
	if own == nil {
		return fmt.Errorf("etcd: mark %q: %w: no key with create revision %d", election, backend.ErrLost, held.Token())
	}
	key := string(own.Key)
	resp, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.TxnResponse, error) {
		return b.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", own.CreateRevision)).
			Then(clientv3.OpPut(key, identity)).
			Commit()
	})
	switch {
	case err != nil:
		return fmt.Errorf("etcd: mark %q: %w", election, err)
	case !resp.Succeeded:
		return fmt.Errorf("etcd: mark %q: %w: key %s is gone", election, backend.ErrLost, key)
	}
	return nil
}

// Unmark deletes the "migrated" marker of election written by
// [Backend.Mark] (it implements migrate.Marker; migrate.Cleanup calls it),
// and nothing else: a candidate's key is left alone, and etcd keeps no
// counter (tokens are create revisions, which only rise). Each delete is
// conditional on the marker key being unchanged since it was read. Unmark
// reports whether it deleted a marker.
func (b *Backend) Unmark(ctx context.Context, election string) (bool, error) {
	if err := backend.ValidateElection(election); err != nil {
		return false, fmt.Errorf("etcd: unmark: %w", err)
	}
	if err := b.usable("unmark", election); err != nil {
		return false, err
	}
	kvs, err := b.candidates(ctx, election)
	if err != nil {
		return false, fmt.Errorf("etcd: unmark %q: %w", election, err)
	}
	removed := false
	for _, kv := range kvs {
		if !isMarker(kv) {
			continue
		}
		resp, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.TxnResponse, error) {
			return b.cli.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
				Then(clientv3.OpDelete(string(kv.Key))).
				Commit()
		})
		if err != nil {
			return removed, fmt.Errorf("etcd: unmark %q: %w", election, err)
		}
		removed = removed || resp.Succeeded
	}
	return removed, nil
}

// candidates reads the candidate keys of election.
func (b *Backend) candidates(ctx context.Context, election string) ([]*mvccpb.KeyValue, error) {
	key, opts := candidateRange(b.electionDir(election))
	resp, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return b.cli.Get(ctx, key, opts...)
	})
	if err != nil {
		return nil, err
	}
	return resp.Kvs, nil
}
