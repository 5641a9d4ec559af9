package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
)

// Campaign writes the candidate key <Prefix><election>/<lease hex> on a
// session of this Backend, then waits, watching only its immediate
// predecessor's key, until no older candidate remains. It keeps the session
// alive while it waits and returns an error wrapping [backend.ErrLost] as
// soon as its key or lease is gone (upstream keeps waiting:
// https://github.com/etcd-io/etcd/issues/19597). When ctx ends first it
// deletes its key (upstream leaves it:
// https://github.com/etcd-io/etcd/issues/21128) and returns ctx.Err().
//
// Each request it makes is bounded by [Options.RequestTimeout]: a cluster
// that does not answer yields a transient error naming the cause within a
// few seconds. Waiting behind an older candidate is not bounded; a
// keepalive that fails while it waits is tried again shortly, and once the
// lease's Deadline has passed without one the Campaign returns the
// failure.
//
// c.TTL is rounded up to whole seconds. A TTL under one second, or one the
// cluster would raise to its minimum lease TTL (ceil(1.5 × its election
// timeout)), returns an error wrapping [backend.ErrInvalid] that names the
// allowed range.
func (b *Backend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if err := backend.ValidateElection(c.Election); err != nil {
		return nil, fmt.Errorf("etcd: campaign: %w", err)
	}
	if err := backend.ValidateIdentity(c.Identity); err != nil {
		return nil, fmt.Errorf("etcd: campaign %q: %w", c.Election, err)
	}
	secs, err := ttlSeconds(c.TTL)
	if err != nil {
		return nil, fmt.Errorf("etcd: campaign %q: %w", c.Election, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.usable("campaign", c.Election); err != nil {
		return nil, err
	}
	// A member cut off from the raft leader fails these requests at once
	// instead of serving them from its own, possibly stale, state.
	ctx = clientv3.WithRequireLeader(ctx)
	l := &lease{b: b, election: c.Election, lost: make(chan struct{})}
	s, err := b.reserve(ctx, l, secs)
	if err != nil {
		return nil, err
	}
	l.s = s
	dir := b.electionDir(c.Election)
	l.key = candidateKey(dir, s.id)
	won, err := b.campaign(ctx, l, dir, c.Identity)
	if err != nil {
		l.abandon(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if b.clientClosed() != nil && !errors.Is(err, backend.ErrClosed) {
			err = fmt.Errorf("etcd: campaign %q: %w: %w", c.Election, errClientClosed, backend.ErrClosed)
		}
		return nil, b.errClosedOr(c.Election, err)
	}
	return won, nil
}

// campaign runs a reserved candidate to victory.
func (b *Backend) campaign(ctx context.Context, l *lease, dir, identity string) (*lease, error) {
	s := l.s
	// Keep the session fresh alongside the put when no recent
	// acknowledgement exists.
	var ka chan error
	if s.age() >= s.ttl/reuseFraction {
		ka = make(chan error, 1)
		go func() {
			_, err := bounded(b, ctx, func(ctx context.Context) (time.Time, error) {
				return s.keepAlive(ctx, l.key, s.ttl/reuseFraction, time.Time{})
			})
			ka <- err
		}()
	}
	// One round trip: write the key, then read the queue it joined (reads
	// in a txn see its earlier writes). Put keeps the create revision of a
	// key already there, which can only be an orphan of this session.
	rk, ropts := candidateRange(dir, clientv3.WithKeysOnly())
	l.put = true
	resp, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.TxnResponse, error) {
		return b.cli.Txn(ctx).Then(
			clientv3.OpPut(l.key, identity, clientv3.WithLease(s.id)),
			clientv3.OpGet(rk, ropts...),
		).Commit()
	})
	if ka != nil {
		if kerr := <-ka; kerr != nil && err == nil && errors.Is(kerr, backend.ErrLost) {
			err = kerr
		}
	}
	if err != nil {
		if isLeaseNotFound(err) {
			s.markLost()
			err = fmt.Errorf("lease %x: %w", int64(s.id), backend.ErrLost)
		}
		return nil, fmt.Errorf("etcd: campaign %q: %w", l.election, err)
	}
	q := readQueue(dir, resp.Responses[1].GetResponseRange().Kvs, l.key)
	if q.own == nil {
		return nil, fmt.Errorf("etcd: campaign %q: key %q missing right after it was written: %w", l.election, l.key, backend.ErrLost)
	}
	l.rev = q.own.CreateRevision
	rev := resp.Header.Revision
	if err := b.startWatch(l, rev+1); err != nil {
		return nil, fmt.Errorf("etcd: campaign %q: %w", l.election, err)
	}
	for q.pred != nil {
		if err := l.waitDelete(ctx, q.pred); err != nil {
			return nil, err
		}
		// Re-read the queue: the predecessor may have had a predecessor,
		// and our own key must still be there.
		key, opts := candidateRange(dir, clientv3.WithKeysOnly())
		gr, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.GetResponse, error) {
			return b.cli.Get(ctx, key, opts...)
		})
		if err != nil {
			return nil, fmt.Errorf("etcd: campaign %q: %w", l.election, err)
		}
		q = readQueue(dir, gr.Kvs, l.key)
		if q.own == nil || q.own.CreateRevision != l.rev {
			l.markLost()
			return nil, fmt.Errorf("etcd: campaign %q: own key deleted while waiting: %w", l.election, backend.ErrLost)
		}
	}
	// Won. Make sure the returned Deadline leaves the caller time to renew.
	if time.Until(s.Deadline()) < s.ttl/2 {
		if _, err := bounded(b, ctx, func(ctx context.Context) (time.Time, error) {
			return s.keepAlive(ctx, l.key, 0, time.Time{})
		}); err != nil {
			return nil, fmt.Errorf("etcd: campaign %q: %w", l.election, err)
		}
	}
	l.acked = s.lastSent()
	if err := l.gone("campaign"); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.held[heldKey{l.election, l.Token()}] = l
	b.mu.Unlock()
	return l, nil
}

// waitDelete waits for the deletion of the predecessor pred, and keeps l's
// session alive meanwhile. It returns nil also when the watch was compacted,
// so the caller re-reads the queue.
//
// The watch starts at the current revision rather than at the revision the
// queue was read at: etcd delivers events to a watch that starts in the past
// only from a loop that runs every 100 ms, which would delay a hand-over
// that closely follows the campaign. A read of pred after the watch exists
// covers the gap.
func (l *lease) waitDelete(ctx context.Context, pred *mvccpb.KeyValue) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := string(pred.Key)
	wch := l.b.cli.Watch(wctx, key, clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	s := l.s
	timer := time.NewTimer(0)
	defer timer.Stop()
	created := false
	var pause time.Duration // before the next keepalive, after a failed one
	for {
		timer.Reset(max(pause, s.ttl/3-s.age()))
		select {
		case wr, ok := <-wch:
			switch {
			case !ok:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("etcd: campaign %q: watch of predecessor closed", l.election)
			case wr.CompactRevision != 0:
				return nil
			case wr.Err() != nil:
				return fmt.Errorf("etcd: campaign %q: watch predecessor: %w", l.election, wr.Err())
			case len(wr.Events) > 0:
				return nil // only deletes pass the filter
			case wr.Created && !created:
				created = true
				resp, err := bounded(l.b, ctx, func(ctx context.Context) (*clientv3.GetResponse, error) {
					return l.b.cli.Get(ctx, key, clientv3.WithKeysOnly())
				})
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return fmt.Errorf("etcd: campaign %q: read predecessor: %w", l.election, err)
				}
				if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != pred.CreateRevision {
					return nil // gone before the watch started
				}
			}
		case <-timer.C:
			// Bounded, and cut short by Close, so that the wait stays
			// responsive while etcd is unreachable.
			kctx, cancel := context.WithTimeout(ctx, s.ttl/3)
			stop := context.AfterFunc(l.b.base, cancel)
			_, err := bounded(l.b, kctx, func(ctx context.Context) (time.Time, error) {
				return s.keepAlive(ctx, l.key, s.ttl/3, time.Time{})
			})
			stop()
			cancel()
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err == nil:
				pause = 0
			case errors.Is(err, backend.ErrLost) || !time.Now().Before(s.Deadline()):
				// Lost, or failing for so long that the key may have
				// lapsed: return the failure; the caller campaigns again.
				return fmt.Errorf("etcd: campaign %q: keep the lease alive while waiting: %w", l.election, err)
			default:
				pause = s.ttl / 10 // a blip: try again shortly
			}
		case <-l.lost:
			return fmt.Errorf("etcd: campaign %q: key or lease gone while waiting: %w", l.election, backend.ErrLost)
		case <-l.b.done:
			return fmt.Errorf("etcd: campaign %q: %w", l.election, backend.ErrClosed)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// abandon removes a candidate that did not win: it deletes its key (with a
// fresh context bounded by Options.CleanupTimeout, since ctx may be done)
// and frees its slot. A key it cannot delete is left to the session's later
// keepalives, and the session takes no new candidates. So is a key whose
// put was sent but not answered (the Campaign was cancelled, or the request
// failed, in flight): the put may be applied after this delete (the client
// sends them as two requests, possibly to two members), and the key would
// then sit first in the election's queue, keeping every candidate out, for
// as long as the session lives. The session's keepalives delete it until a
// delete finds it.
func (l *lease) abandon(ctx context.Context) {
	if l.s.isLost() || l.b.clientClosed() != nil {
		l.finish()
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.b.cfg.cleanup)
	defer cancel()
	deleted, err := deleteKey(cctx, l.b.cli, l.key, l.rev)
	switch {
	case l.rev == 0 && l.put && !deleted:
		l.s.orphan(l.key, orphanUnapplied)
	case err != nil:
		l.s.orphan(l.key, l.rev)
	}
	l.finish()
}
