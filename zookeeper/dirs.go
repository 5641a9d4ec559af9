package zookeeper

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// How a Campaign makes sure its election's znode exists without a round
// trip of its own. A Backend remembers the znodes it made or found
// (knownDirs). A Campaign in an election whose znode it does not know first
// makes sure of the znode's parent (ensurePath: shared by the Campaigns
// that need it at once, and remembered), then sends the create of the
// election's znode right ahead of its candidate's create and listing: the
// server answers them in that order, in one round trip. So the first
// Campaigns in ten thousand new elections cost two writes each and one round
// trip, not a failed create, a create of the election's znode and the
// candidate's create again (three writes, three round trips); and a
// Campaign in a known election sends its candidate's create and listing
// only. A known znode that the server reaped since (an empty container)
// fails the candidate's create; it is forgotten and made again.

// knownDirsMax bounds the znodes a Backend remembers; past it, it forgets
// them all and learns again.
const knownDirsMax = 1 << 16

// knownDirs is the set of znodes a Backend knows to exist (or to have
// existed: see createListed).
type knownDirs struct {
	mu   sync.Mutex
	dirs map[string]struct{}
}

func (k *knownDirs) has(p string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.dirs[p]
	return ok
}

func (k *knownDirs) add(p string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dirs == nil || len(k.dirs) >= knownDirsMax {
		k.dirs = make(map[string]struct{})
	}
	k.dirs[p] = struct{}{}
}

func (k *knownDirs) forget(p string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.dirs, p)
}

// parent returns the parent of znode path p, or "" for a child of the root.
func parent(p string) string {
	return p[:max(strings.LastIndexByte(p, '/'), 0)]
}

// ensurePath creates p and its missing ancestors as container nodes, unless
// known to exist ("" is the root). Concurrent calls for the same path share
// one creation, which ends with the Backend, not with the ctx of the call
// that began it.
func (b *Backend) ensurePath(ctx context.Context, s *session, p string) error {
	if p == "" || b.dirs.has(p) {
		return nil
	}
	made := b.ensuring.DoChan(p, func() (any, error) {
		return nil, b.makePath(context.WithoutCancel(ctx), s, p)
	})
	select {
	case r := <-made:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// makePath is one creation of ensurePath.
func (b *Backend) makePath(ctx context.Context, s *session, p string) error {
	for attempt := 0; ; attempt++ {
		_, err := do(b, ctx, func() (string, error) {
			return s.conn.CreateContainer(p, nil, zk.FlagContainer, b.cfg.acl)
		}, nil)
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			b.dirs.add(p)
			return nil
		case errors.Is(err, zk.ErrNoNode) && attempt < 2:
			b.dirs.forget(parent(p)) // reaped since, if it was known
			if err := b.ensurePath(ctx, s, parent(p)); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// sendContainer sends the create of container znode dir, and returns once
// the request is written (a request sent after it reaches the server after
// it) or answered; the answer does not matter, the candidate's create that
// follows tells.
func (b *Backend) sendContainer(ctx context.Context, s *session, dir string) error {
	written, done := s.containerWritten(dir)
	defer done()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		_, _ = do(b, ctx, func() (string, error) {
			return s.conn.CreateContainer(dir, nil, zk.FlagContainer, b.cfg.acl)
		}, nil)
	}()
	select {
	case <-written:
		return nil
	case <-answered:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
