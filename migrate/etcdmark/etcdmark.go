// Package etcdmark writes the "migrated" marker of package migrate into the
// etcd cluster of an etcd backend, for migrations away from etcd.
//
// The marker is the marking candidate's own key made persistent: the key
// Prefix + election + "/" + <lease ID> that holds the election (the lowest
// create revision, see the etcd package documentation) is put again without
// a lease, with the value "migrated-to-<new>". A put keeps a key's create
// revision, so the marker stays first in the election's queue for good and
// outlives the lease: every etcd candidate, including concurrency.Election
// and `etcdctl elect`, waits behind it, and the etcd driver's Leader reports
// it as the holder, its token the create revision of the last term.
package etcdmark

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/migrate"
)

// Marker implements [migrate.Marker] on an etcd cluster. Create it with
// [New].
type Marker struct {
	cli    *clientv3.Client
	prefix string
}

var _ migrate.Marker = (*Marker)(nil)

// New returns a Marker writing through cli under prefix, the etcd backend's
// Options.Prefix. New does not take ownership of cli: close it yourself.
func New(cli *clientv3.Client, prefix string) (*Marker, error) {
	if cli == nil {
		return nil, fmt.Errorf("etcdmark: %w: client is nil", backend.ErrInvalid)
	}
	return &Marker{cli: cli, prefix: prefix}, nil
}

// candidates reads the keys of election's queue.
func (m *Marker) candidates(ctx context.Context, election string) (string, []*mvccpb.KeyValue, error) {
	dir := m.prefix + election + "/"
	resp, err := m.cli.Get(ctx, dir+"0", clientv3.WithRange(dir+"g"))
	if err != nil {
		return "", nil, err
	}
	return dir, resp.Kvs, nil
}

func isMarker(kv *mvccpb.KeyValue) bool {
	return kv.Lease == 0 && strings.HasPrefix(string(kv.Value), migrate.MarkerPrefix)
}

// Mark detaches held's key from its lease and writes the marker identity
// into it, in one transaction that checks the key's create revision is
// held's token. It succeeds at once when the election carries a marker.
func (m *Marker) Mark(ctx context.Context, election string, held backend.Lease, identity string) error {
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("etcdmark: %w", err)
	}
	if !time.Now().Before(held.Deadline()) {
		return fmt.Errorf("etcdmark: mark %q: %w: the lease's deadline has passed", election, backend.ErrLost)
	}
	_, kvs, err := m.candidates(ctx, election)
	if err != nil {
		return fmt.Errorf("etcdmark: mark %q: %w", election, err)
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
		return fmt.Errorf("etcdmark: mark %q: %w: no key with create revision %d", election, backend.ErrLost, held.Token())
	}
	key := string(own.Key)
	resp, err := m.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", own.CreateRevision)).
		Then(clientv3.OpPut(key, identity)).
		Commit()
	switch {
	case err != nil:
		return fmt.Errorf("etcdmark: mark %q: %w", election, err)
	case !resp.Succeeded:
		return fmt.Errorf("etcdmark: mark %q: %w: key %s is gone", election, backend.ErrLost, key)
	}
	return nil
}

// Unmark deletes the marker keys of election. etcd keeps nothing else for
// an election.
func (m *Marker) Unmark(ctx context.Context, election string) error {
	_, kvs, err := m.candidates(ctx, election)
	if err != nil {
		return fmt.Errorf("etcdmark: unmark %q: %w", election, err)
	}
	for _, kv := range kvs {
		if !isMarker(kv) {
			continue
		}
		_, err := m.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).
			Commit()
		if err != nil {
			return fmt.Errorf("etcdmark: unmark %q: %w", election, err)
		}
	}
	return nil
}
