package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// Leader reports the first candidate of election, as Curator's
// LeaderLatch.getLeader does: its identity (the znode's data) and token (its
// czxid). TTL is 0: a ZooKeeper lease has no remaining time to read. It
// returns an error wrapping [backend.ErrNoLeader] when there is no candidate.
//
// Leader and Watch read on the oldest session of b that campaigns use, so a
// process that campaigns holds no extra session for its reads and reads
// after its own writes (ZooKeeper orders a session's requests). A Backend
// that has not campaigned yet reads on a session of its own, asked for a
// 10s timeout, which it keeps until Close.
//
// The server a session reads from may lag the ensemble leader by the
// writes it has not applied yet, so Leader first syncs that server with the
// leader (ZooKeeper's sync, one round trip more): a
// candidate that led before Leader was called, in any process, is seen.
func (b *Backend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if err := validateElection(election); err != nil {
		return backend.Holder{}, err
	}
	s, err := b.reader(ctx)
	if err != nil {
		return backend.Holder{}, wrap("leader", election, err)
	}
	if _, err := do(b, ctx, func() (string, error) { return s.conn.Sync(b.electionPath(election)) }, nil); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return backend.Holder{}, wrap("leader", election, err)
	}
	h, _, err := b.holder(ctx, s, election, false)
	if err != nil {
		return backend.Holder{}, wrap("leader", election, err)
	}
	if h.IsZero() {
		return backend.Holder{}, fmt.Errorf("zookeeper: leader %q: %w", election, backend.ErrNoLeader)
	}
	return h, nil
}

// holder reads the first readable candidate of election, with a watch on its
// znode when watch is set.
func (b *Backend) holder(ctx context.Context, s *session, election string, watch bool) (backend.Holder, <-chan zk.Event, error) {
	dir := b.electionPath(election)
	kids, err := do(b, ctx, func() ([]string, error) {
		kids, _, err := s.conn.Children(dir)
		return kids, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return backend.Holder{}, nil, nil
	}
	if err != nil {
		return backend.Holder{}, nil, err
	}
	type node struct {
		data []byte
		stat *zk.Stat
		ch   <-chan zk.Event
	}
	for _, c := range sortCandidates(kids) {
		n, err := do(b, ctx, func() (node, error) {
			if watch {
				data, st, ch, err := s.conn.GetW(dir + "/" + c.name)
				return node{data, st, ch}, err
			}
			data, st, err := s.conn.Get(dir + "/" + c.name)
			return node{data: data, stat: st}, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since the listing: the next one leads
		}
		if err != nil {
			return backend.Holder{}, nil, err
		}
		return backend.Holder{Election: election, Identity: string(n.data), Token: uint64(n.stat.Czxid)}, n.ch, nil
	}
	return backend.Holder{}, nil, nil
}

// isClosed reports whether b is closed.
func (b *Backend) isClosed() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}
