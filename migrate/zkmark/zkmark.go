// Package zkmark writes the "migrated" marker of package migrate into the
// ZooKeeper ensemble of a zookeeper backend, for migrations away from
// ZooKeeper.
//
// A candidate znode is ephemeral and cannot be made persistent, so the
// marker is a persistent znode in the candidates' own format that sorts
// before every candidate: <Root>/<election>/_c_<MarkerUUID>-latch--, with
// the identity "migrated-to-<new>" as its data. Candidates sort by the text
// after the last "latch-" (see the zookeeper package documentation), and
// "-" sorts before every digit of a sequence number, so the marker is first
// for good once the marking candidate's own znode, which Mark deletes, is
// gone: every candidate, including a Curator LeaderLatch on the same
// path, watches its predecessor and waits, and the zookeeper driver's Leader
// reports the marker as the holder, its token the marker's czxid.
package zkmark

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/migrate"
)

// MarkerUUID is the protection id in the marker znode's name.
const MarkerUUID = "6d696772-6174-4564-a16d-61726b657221"

// Name is the marker znode's name under the election's znode.
const Name = "_c_" + MarkerUUID + "-latch--"

// Marker implements [migrate.Marker] on a ZooKeeper ensemble. Create it
// with [New].
type Marker struct {
	conn *zk.Conn
	root string
	acl  []zk.ACL
}

var _ migrate.Marker = (*Marker)(nil)

// New returns a Marker writing through conn under root, the zookeeper
// backend's Options.Root, with acl (nil: zk.WorldACL(zk.PermAll), the
// backend's default). New does not take ownership of conn: close it
// yourself.
func New(conn *zk.Conn, root string, acl []zk.ACL) (*Marker, error) {
	if conn == nil {
		return nil, fmt.Errorf("zkmark: %w: connection is nil", backend.ErrInvalid)
	}
	if acl == nil {
		acl = zk.WorldACL(zk.PermAll)
	}
	return &Marker{conn: conn, root: root, acl: acl}, nil
}

func (m *Marker) path(election string) string { return m.root + "/" + election + "/" + Name }

// Mark creates the persistent marker znode while held still holds the
// election, so that it joins the queue while no other candidate can lead,
// then deletes held's own candidate znode (the one whose czxid is held's
// token): the marker is then the first candidate, and watchers of the old
// holder's znode (waiting candidates, Leader watches) are woken to find it.
// A marker already there is success. go-zookeeper calls take no context:
// ctx is checked only between calls.
func (m *Marker) Mark(ctx context.Context, election string, held backend.Lease, identity string) error {
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("zkmark: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !time.Now().Before(held.Deadline()) {
		return fmt.Errorf("zkmark: mark %q: %w: the lease's deadline has passed", election, backend.ErrLost)
	}
	_, err := m.conn.Create(m.path(election), []byte(identity), 0, m.acl)
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("zkmark: mark %q: %w", election, err)
	}
	if err := m.dropHeld(ctx, election, held.Token()); err != nil {
		return fmt.Errorf("zkmark: mark %q: %w", election, err)
	}
	return nil
}

// dropHeld deletes the candidate znode of election whose czxid is token.
func (m *Marker) dropHeld(ctx context.Context, election string, token uint64) error {
	dir := m.root + "/" + election
	kids, _, err := m.conn.Children(dir)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if k == Name || !strings.HasPrefix(k, "_c_") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, st, err := m.conn.Exists(dir + "/" + k)
		switch {
		case err != nil:
			return err
		case !ok || uint64(st.Czxid) != token:
			continue
		}
		if err := m.conn.Delete(dir+"/"+k, st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
	return nil
}

// Unmark deletes the marker znode of election. The election's znode is a
// container, which the server removes once it is empty.
func (m *Marker) Unmark(ctx context.Context, election string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := m.conn.Delete(m.path(election), -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zkmark: unmark %q: %w", election, err)
	}
	return nil
}
