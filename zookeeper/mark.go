package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/backend"
)

// MarkerUUID is the protection id in the name of a "migrated" marker znode
// written by [Backend.Mark].
const MarkerUUID = "6d696772-6174-4564-a16d-61726b657221"

// MarkerName is the name of the "migrated" marker znode under the
// election's znode. Candidates sort by the text after the last "latch-",
// and "-" sorts before every digit of a sequence number, so the marker
// sorts before every candidate.
const MarkerName = "_c_" + MarkerUUID + "-latch--"

// Mark writes the persistent "migrated" marker of package
// github.com/leaderkit/elector/migrate (it implements migrate.Marker, for
// migrations away from ZooKeeper). A candidate znode is ephemeral and
// cannot be made persistent, so Mark creates the persistent znode
// [MarkerName] with identity as its data (and the Backend's ACL) while
// held, the lease of election the caller holds, still holds the election,
// then deletes held's own candidate znode (the one whose czxid is held's
// token). The marker is then the first candidate for good: every
// candidate, including a Curator LeaderLatch on the same path, waits behind
// it, and Leader reports identity as the holder, its token the marker's
// czxid. identity starts with "migrated-to-". A marker already there is
// success. Held's lease is lost once its znode is gone.
func (b *Backend) Mark(ctx context.Context, election string, held backend.Lease, identity string) error {
	if err := validateElection(election); err != nil {
		return err
	}
	if !strings.HasPrefix(identity, "migrated-to-") {
		return fmt.Errorf("zookeeper: mark %q: %w: identity %q; want one starting with \"migrated-to-\"", election, backend.ErrInvalid, identity)
	}
	if !time.Now().Before(held.Deadline()) {
		return fmt.Errorf("zookeeper: mark %q: %w: the lease's deadline has passed", election, backend.ErrLost)
	}
	s, err := b.reader(ctx)
	if err != nil {
		return wrap("mark", election, err)
	}
	dir := b.electionPath(election)
	_, err = do(b, ctx, func() (string, error) {
		return s.conn.Create(dir+"/"+MarkerName, []byte(identity), 0, b.cfg.acl)
	}, nil)
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return wrap("mark", election, err)
	}
	if err := b.dropHeld(ctx, s, dir, held.Token()); err != nil {
		return wrap("mark", election, err)
	}
	return nil
}

// dropHeld deletes the candidate znode under dir whose czxid is token.
func (b *Backend) dropHeld(ctx context.Context, s *session, dir string, token uint64) error {
	kids, err := do(b, ctx, func() ([]string, error) {
		kids, _, err := s.conn.Children(dir)
		return kids, err
	}, nil)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if k == MarkerName || !strings.HasPrefix(k, "_c_") {
			continue
		}
		st, err := do(b, ctx, func() (*zk.Stat, error) {
			ok, st, err := s.conn.Exists(dir + "/" + k)
			if err == nil && !ok {
				st = nil
			}
			return st, err
		}, nil)
		switch {
		case err != nil:
			return err
		case st == nil || uint64(st.Czxid) != token:
			continue
		}
		_, err = do(b, ctx, func() (struct{}, error) {
			return struct{}{}, s.conn.Delete(dir+"/"+k, st.Version)
		}, nil)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
	return nil
}

// Unmark deletes the "migrated" marker znode of election written by
// [Backend.Mark] (it implements migrate.Marker; migrate.Cleanup calls it),
// and nothing else: candidates' znodes are left alone, and ZooKeeper keeps
// no counter (tokens are czxids, which only rise). The election's znode is
// a container, which the server removes once it is empty. Unmark reports
// whether it deleted the marker.
func (b *Backend) Unmark(ctx context.Context, election string) (bool, error) {
	if err := validateElection(election); err != nil {
		return false, err
	}
	s, err := b.reader(ctx)
	if err != nil {
		return false, wrap("unmark", election, err)
	}
	_, err = do(b, ctx, func() (struct{}, error) {
		return struct{}{}, s.conn.Delete(b.electionPath(election)+"/"+MarkerName, -1)
	}, nil)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, nil
	case err != nil:
		return false, wrap("unmark", election, err)
	}
	return true, nil
}
