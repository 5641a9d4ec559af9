package etcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/orphans"
)

// registryDir returns the key directory of election's registry of
// candidates: <Prefix>../candidates/<election>/. No election's directory
// contains it (a name's segments are never ".."), so neither etcdctl elect
// nor concurrency.Election, which read every key under <election>/ as a
// candidate, ever see an entry.
func (b *Backend) registryDir(election string) string {
	return b.cfg.prefix + "../candidates/" + election + "/"
}

// registration implements [backend.Registration]: a key
// <registryDir>/<lease hex> on an etcd lease of its own, which Refresh keeps
// alive and Withdraw revokes.
type registration struct {
	b     *Backend
	c     backend.Candidate
	key   string
	lease clientv3.LeaseID
}

// Register implements [backend.Registry]. The entry lives on an etcd lease
// of c.TTL (rounded up to whole seconds) that [backend.Registration.Refresh]
// keeps alive; Close revokes it. A Register that fails after its put
// revokes the lease; when that revoke fails too, the next Register of the
// same election and identity revokes it first, and Close does if none
// comes.
func (b *Backend) Register(ctx context.Context, c backend.Candidate, aside bool) (backend.Registration, error) {
	if err := backend.ValidateElection(c.Election); err != nil {
		return nil, fmt.Errorf("etcd: register: %w", err)
	}
	if err := backend.ValidateIdentity(c.Identity); err != nil {
		return nil, fmt.Errorf("etcd: register %q: %w", c.Election, err)
	}
	secs, err := ttlSeconds(c.TTL)
	if err != nil {
		return nil, fmt.Errorf("etcd: register %q: %w", c.Election, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.usable("register", c.Election); err != nil {
		return nil, err
	}
	ctx = clientv3.WithRequireLeader(ctx)
	b.regs.revokeOrphan(ctx, c)
	g, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.LeaseGrantResponse, error) {
		return b.cli.Grant(ctx, secs)
	})
	if err != nil {
		return nil, b.regErr(ctx, "register", c.Election, err)
	}
	r := &registration{b: b, c: c, lease: g.ID, key: candidateKey(b.registryDir(c.Election), g.ID)}
	if !b.regs.add(r) {
		_ = r.revoke()
		return nil, fmt.Errorf("etcd: register %q: %w", c.Election, backend.ErrClosed)
	}
	if err := r.put(ctx, aside); err != nil {
		// The put may have landed where only its reply was lost: the
		// revoke deletes its key. One that fails leaves r an orphan, which
		// the next Register of the candidate revokes first, and Close if
		// none comes; its lease expires after c.TTL otherwise.
		b.regs.remove(r)
		if r.revoke() != nil {
			b.regs.orphans.Put(orphans.Key{Election: c.Election, Identity: c.Identity}, r, time.Now().Add(time.Duration(secs+1)*time.Second))
		}
		return nil, err
	}
	return r, nil
}

// regErr returns ctx.Err() when ctx has ended, and err wrapped otherwise.
func (b *Backend) regErr(ctx context.Context, op, election string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if isLeaseNotFound(err) {
		err = fmt.Errorf("%w: %w", err, backend.ErrLost)
	}
	return b.errClosedOr(election, fmt.Errorf("etcd: %s %q: %w", op, election, err))
}

// Entries implements [backend.Registry] with one linearizable read.
func (b *Backend) Entries(ctx context.Context, election string) ([]backend.Entry, error) {
	if err := backend.ValidateElection(election); err != nil {
		return nil, fmt.Errorf("etcd: entries: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.usable("entries", election); err != nil {
		return nil, err
	}
	dir := b.registryDir(election)
	key, opts := candidateRange(dir)
	resp, err := bounded(b, clientv3.WithRequireLeader(ctx), func(ctx context.Context) (*clientv3.GetResponse, error) {
		return b.cli.Get(ctx, key, opts...)
	})
	if err != nil {
		return nil, b.regErr(ctx, "entries", election, err)
	}
	m := make(map[string]backend.Entry)
	for _, kv := range resp.Kvs {
		putEntry(m, dir, kv)
	}
	return entryList(m), nil
}

// putEntry records kv in m if it is an entry directly under dir.
func putEntry(m map[string]backend.Entry, dir string, kv *mvccpb.KeyValue) {
	if !isCandidate(dir, kv.Key) {
		return
	}
	en, err := backend.DecodeEntry(string(kv.Value))
	if err != nil {
		return // not written by elector: not a candidate it knows
	}
	en.ID = string(kv.Key[len(dir):])
	m[en.ID] = en
}

func entryList(m map[string]backend.Entry) []backend.Entry {
	out := make([]backend.Entry, 0, len(m))
	for _, en := range m {
		out = append(out, en)
	}
	return out
}

// WatchEntries implements [backend.Registry]: one read, then a watch of the
// registry from the revision after it.
func (b *Backend) WatchEntries(ctx context.Context, election string, fn func([]backend.Entry)) error {
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("etcd: watch entries: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := b.usable("watch entries", election); err != nil {
		return err
	}
	dir := b.registryDir(election)
	key, opts := candidateRange(dir)
	resp, err := bounded(b, clientv3.WithRequireLeader(ctx), func(ctx context.Context) (*clientv3.GetResponse, error) {
		return b.cli.Get(ctx, key, opts...)
	})
	if err != nil {
		return b.regErr(ctx, "watch entries", election, err)
	}
	m := make(map[string]backend.Entry)
	for _, kv := range resp.Kvs {
		putEntry(m, dir, kv)
	}
	fn(entryList(m))
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := b.cli.Watch(wctx, key, append(opts, clientv3.WithRev(resp.Header.Revision+1))...)
	for {
		select {
		case wr, ok := <-wch:
			if !ok || wr.Canceled || wr.Err() != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err := b.usable("watch entries", election); err != nil {
					return err
				}
				return fmt.Errorf("etcd: watch entries %q: watch ended: %v", election, wr.Err())
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					if isCandidate(dir, ev.Kv.Key) {
						delete(m, string(ev.Kv.Key[len(dir):]))
					}
					continue
				}
				putEntry(m, dir, ev.Kv)
			}
			fn(entryList(m))
		case <-ctx.Done():
			return ctx.Err()
		case <-b.done:
			return fmt.Errorf("etcd: watch entries %q: %w", election, backend.ErrClosed)
		}
	}
}

func (r *registration) ID() string { return r.key[len(r.b.registryDir(r.c.Election)):] }

// put writes the entry on its lease; it fails with ErrLost once the lease
// is gone.
func (r *registration) put(ctx context.Context, aside bool) error {
	c := r.c
	val := backend.EncodeEntry(backend.Entry{Identity: c.Identity, Priority: c.Priority, Aside: aside})
	_, err := bounded(r.b, clientv3.WithRequireLeader(ctx), func(ctx context.Context) (*clientv3.PutResponse, error) {
		return r.b.cli.Put(ctx, r.key, val, clientv3.WithLease(r.lease))
	})
	if err != nil {
		return r.b.regErr(ctx, "register", c.Election, err)
	}
	return nil
}

func (r *registration) SetAside(ctx context.Context, aside bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.b.usable("register", r.c.Election); err != nil {
		return err
	}
	return r.put(ctx, aside)
}

func (r *registration) Refresh(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.b.usable("refresh entry", r.c.Election); err != nil {
		return err
	}
	resp, err := bounded(r.b, clientv3.WithRequireLeader(ctx), func(ctx context.Context) (*clientv3.LeaseKeepAliveResponse, error) {
		return r.b.cli.KeepAliveOnce(ctx, r.lease)
	})
	if err == nil && resp.TTL <= 0 {
		err = fmt.Errorf("lease %x expired", int64(r.lease))
		return fmt.Errorf("etcd: refresh entry %q: %w: %w", r.c.Election, err, backend.ErrLost)
	}
	if err != nil {
		return r.b.regErr(ctx, "refresh entry", r.c.Election, err)
	}
	return nil
}

func (r *registration) Withdraw(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.b.regs.remove(r)
	if err := r.revokeWithin(ctx); err != nil {
		return r.b.regErr(ctx, "withdraw entry", r.c.Election, err)
	}
	return nil
}

// revokeWithin revokes the entry's lease, bounded by ctx and
// RequestTimeout.
func (r *registration) revokeWithin(ctx context.Context) error {
	_, err := bounded(r.b, ctx, func(ctx context.Context) (*clientv3.LeaseRevokeResponse, error) {
		return r.b.cli.Revoke(ctx, r.lease)
	})
	return err
}

// revoke revokes the entry's lease, bounded by Options.CleanupTimeout. A
// lease already gone counts as revoked.
func (r *registration) revoke() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.b.cfg.cleanup)
	defer cancel()
	_, err := r.b.cli.Revoke(ctx, r.lease)
	if isLeaseNotFound(err) {
		return nil
	}
	return err
}

// registrations are the live registrations of a Backend, revoked by Close,
// and the orphans of failed Registers.
type registrations struct {
	mu     sync.Mutex
	closed bool
	m      map[*registration]struct{}
	// orphans holds the registrations of failed Registers whose key may
	// exist and whose lease no revoke reached, until their lease expires.
	orphans orphans.Set[*registration]
}

// revokeOrphan revokes the lease of the orphan of c's candidate, if any,
// so that readers do not list the candidate twice; the revoke is bounded
// by RequestTimeout. It keeps the orphan when the revoke fails.
func (rs *registrations) revokeOrphan(ctx context.Context, c backend.Candidate) {
	rs.orphans.Clean(orphans.Key{Election: c.Election, Identity: c.Identity}, func(r *registration) bool {
		err := r.revokeWithin(ctx)
		return err == nil || isLeaseNotFound(err)
	})
}

// add records r, unless the Backend is closed.
func (rs *registrations) add(r *registration) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return false
	}
	if rs.m == nil {
		rs.m = make(map[*registration]struct{})
	}
	rs.m[r] = struct{}{}
	return true
}

func (rs *registrations) remove(r *registration) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.m, r)
}

// close revokes every registration and orphan, in parallel.
func (rs *registrations) close() {
	rs.mu.Lock()
	rs.closed = true
	all := rs.m
	rs.m = nil
	rs.mu.Unlock()
	if all == nil {
		all = make(map[*registration]struct{})
	}
	for _, r := range rs.orphans.Close() {
		all[r] = struct{}{}
	}
	var wg sync.WaitGroup
	for r := range all {
		wg.Go(func() { _ = r.revoke() })
	}
	wg.Wait()
}

var _ backend.Registry = (*Backend)(nil)
