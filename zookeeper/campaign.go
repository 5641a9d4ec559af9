package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// Campaign joins election c.Election as a Curator LeaderLatch participant
// would: it creates the EPHEMERAL_SEQUENTIAL znode
// <Prefix>/<election>/_c_<uuid>-latch-<seq> holding c.Identity, then waits,
// watching only its predecessor, until its znode is the first candidate and
// is owned by its session. The lease's TTL is c.TTL: the candidate uses the
// Backend's session of that TTL, made at the first Campaign with it. A TTL
// outside [MinTTL, MaxTTL], shorter than twice [Options.DisconnectGrace], or
// one the ensemble does not grant as a session timeout as asked, is refused
// with an error wrapping [backend.ErrInvalid] that names the range.
//
// When ctx ends first, Campaign returns ctx.Err() and deletes its znode in
// the background (at once if connected, else as soon as the session is).
func (b *Backend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if err := validateElection(c.Election); err != nil {
		return nil, err
	}
	if err := backend.ValidateIdentity(c.Identity); err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	s, err := b.campaignSession(ctx, c.TTL)
	if err != nil {
		return nil, wrap("campaign", c.Election, err)
	}
	dir := b.electionPath(c.Election)
	fresh := !b.dirs.has(dir)
	if fresh {
		// The election's znode may be missing: make sure of its parent,
		// so that the create of the election's znode, sent right ahead of
		// the candidate's, can succeed. Only the candidate's create tells
		// (an ACL may forbid creating the parent, yet allow the candidate).
		if err := b.ensurePath(ctx, s, parent(dir)); ctx.Err() != nil {
			return nil, wrap("campaign", c.Election, err)
		}
	}
	uuid := newUUID()
	before, _ := s.state()
	s.expectCreate(uuid)
	in := s.listen(nil, dir)
	defer s.unlisten(in)
	path, first, err := b.createListed(ctx, s, in, uuid, []byte(c.Identity), fresh)
	czxid := s.takeCreate(uuid)
	if err != nil {
		return nil, wrap("campaign", c.Election, err)
	}
	if now, _ := s.state(); czxid != 0 && leadsAtOnce(first, path[len(dir)+1:], before, now) {
		// Led on the listing and the create's czxid; the listing armed
		// the election's watch.
		fastLeads.Add(1)
		l, err := b.newLease(s, c, path, uint64(czxid), before.id, in, before.epoch)
		if err != nil {
			s.abandon(path, false)
			return nil, wrap("campaign", c.Election, err)
		}
		return l, nil
	}
	l, err := b.await(ctx, s, c, in, path)
	if err != nil {
		s.abandon(path, false)
		return nil, wrap("campaign", c.Election, err)
	}
	return l, nil
}

// fastLeads counts the Campaigns that led from the listing behind their
// create, for tests.
var fastLeads atomic.Int64

// listing is the children of an election znode and the znode's Stat, read
// in one request that left a children watch on the znode.
type listing struct {
	kids []string
	stat *zk.Stat
}

// createListed creates the candidate znode (createCandidate) and lists the
// election's children in a request queued right behind the create's, so
// that both take one round trip: the server answers a session's requests in
// the order sent, so a listing that holds the new znode was read after the
// create. The listing is nil when it could not be read; it may miss the
// znode (another create of the session was written first). With fresh set
// (the election's znode is not known to exist), a create of the election's
// znode goes right ahead of them, in the same round trip. When the
// election's znode is missing nonetheless (a container the server reaped
// since), it is made and the candidate's create and listing are sent again.
func (b *Backend) createListed(ctx context.Context, s *session, in *intent, uuid string, data []byte, fresh bool) (string, *listing, error) {
	dir := in.dir
	for attempt := 0; ; attempt++ {
		path, first, err := b.createListedOnce(ctx, s, in, uuid, data, fresh && attempt == 0)
		if err == nil {
			b.dirs.add(dir)
		}
		if !errors.Is(err, zk.ErrNoNode) || attempt >= 2 {
			return path, first, err
		}
		b.dirs.forget(dir)
		if err := b.ensurePath(ctx, s, dir); err != nil {
			return "", nil, err
		}
	}
}

// createListedOnce is one attempt of createListed.
func (b *Backend) createListedOnce(ctx context.Context, s *session, in *intent, uuid string, data []byte, withDir bool) (string, *listing, error) {
	dir := in.dir
	if withDir {
		if err := b.sendContainer(ctx, s, dir); err != nil {
			return "", nil, err
		}
	}
	written := s.nextCreate()
	cc := make(chan created, 1)
	go func() {
		path, err := b.createCandidate(ctx, s, dir, uuid, data)
		cc <- created{path, err}
	}()
	if r, done := createdFirst(written, cc); done {
		return r.path, nil, r.err
	}
	var first *listing
	s.listen(in, dir)
	ls, err := do(b, ctx, func() (listing, error) {
		kids, stat, _, err := s.conn.ChildrenW(dir)
		return listing{kids, stat}, err
	}, nil)
	if err == nil {
		first = &ls
	}
	r := <-cc
	return r.path, first, r.err
}

// created is the outcome of a candidate's create.
type created struct {
	path string
	err  error
}

// createdFirst waits until the create is written or answered. It reports
// done, with the outcome, when the answer is in and the create failed or
// was not written (a retry's); otherwise the listing goes behind the create,
// and a successful answer already in is put back in cc for the caller: a
// listing read after the create decides at once whether the candidate
// leads.
func createdFirst(written <-chan struct{}, cc chan created) (created, bool) {
	select {
	case <-written:
		return created{}, false
	case r := <-cc:
		select {
		case <-written:
			if r.err == nil {
				cc <- r
				return created{}, false
			}
		default:
		}
		return r, true
	}
}

// leadsAtOnce reports whether first, the listing read right behind the
// create of the candidate znode name, proves that the candidate leads
// without another read: the listing holds the znode (so it was read after
// the create) as the first candidate, and the session that sent the create
// is the current one, connected all along, so it owns the znode (Curator's
// CURATOR-696 check).
func leadsAtOnce(first *listing, name string, before, now state) bool {
	if first == nil || before.id == 0 || now.id != before.id || now.epoch != before.epoch || !now.up || now.closed {
		return false
	}
	cands := sortCandidates(first.kids)
	return len(cands) > 0 && cands[0].name == name
}

// createCandidate creates the candidate znode; it fails with zk.ErrNoNode
// when the election's znode is missing.
func (b *Backend) createCandidate(ctx context.Context, s *session, dir, uuid string, data []byte) (string, error) {
	return b.createProtected(ctx, s, dir, protectedPrefix+uuid+"-", latchLock, data)
}

// createProtected creates the EPHEMERAL_SEQUENTIAL znode
// dir/<prefix><suffix><seq>, prefix unique to this create. It is Curator's
// protected create: after a connection loss it looks for its own znode by
// prefix among the children rather than leave an orphan, and if it cannot
// tell, it has any such znode deleted later.
func (b *Backend) createProtected(ctx context.Context, s *session, dir, prefix, suffix string, data []byte) (string, error) {
	name := dir + "/" + prefix + suffix
	path, err := do(b, ctx, func() (string, error) {
		return s.conn.Create(name, data, zk.FlagEphemeral|zk.FlagSequence, b.cfg.acl)
	}, func(path string, err error) {
		// Nobody waits for this create any more: undo it.
		switch {
		case err == nil:
			s.abandon(path, false)
		case errors.Is(err, zk.ErrConnectionClosed):
			s.abandon(dir+"/"+prefix, true)
		}
	})
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, zk.ErrConnectionClosed):
		// The create may have happened: find it by its prefix. The server
		// we reconnected to may lag behind the one that took the create,
		// so sync it with the leader first.
		kids, cerr := do(b, ctx, func() ([]string, error) {
			if _, err := s.conn.Sync(dir); err != nil {
				return nil, err
			}
			kids, _, err := s.conn.Children(dir)
			return kids, err
		}, nil)
		if cerr != nil {
			s.abandon(dir+"/"+prefix, true)
			return "", err
		}
		for _, k := range kids {
			if strings.HasPrefix(k, prefix) {
				return dir + "/" + k, nil
			}
		}
		return "", err
	default:
		return "", err
	}
}

// own is the result of reading a candidate's own znode and its siblings.
type own struct {
	stat  *zk.Stat
	watch <-chan zk.Event
	kids  []string
	err   error // of the listing, inside the goroutine
}

// await runs Curator's checkLeadership loop for the candidate znode path
// until it leads, and returns its lease.
func (b *Backend) await(ctx context.Context, s *session, c backend.Candidate, in *intent, path string) (*lease, error) {
	dir := in.dir
	name := path[len(dir)+1:]
	var ownWatch <-chan zk.Event // armed on the candidate's own znode
	var stat *zk.Stat            // of the own znode, read when its watch was armed
	for {
		st, changed := s.state()
		if st.closed {
			return nil, errClosed
		}
		rearm := ownWatch == nil
		me, err := b.readOwn(ctx, s, in, path, rearm)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, errVanished
		}
		if err != nil {
			return nil, err
		}
		if rearm {
			ownWatch, stat = me.watch, me.stat
		}
		me.stat = stat
		cands := sortCandidates(me.kids)
		idx := slices.IndexFunc(cands, func(cd candidate) bool { return cd.name == name })
		if idx < 0 {
			return nil, errVanished
		}
		owner := me.stat.EphemeralOwner
		if idx == 0 {
			// Curator's CURATOR-696 check: lead only with a znode of the
			// current session.
			if now, _ := s.state(); owner != now.id || owner == 0 {
				return nil, errSessionEnded
			}
			return b.newLease(s, c, path, uint64(me.stat.Czxid), owner, in, st.epoch)
		}
		pred := dir + "/" + cands[idx-1].name
		type predecessor struct {
			data []byte
			stat *zk.Stat
			ch   <-chan zk.Event
		}
		pw, err := do(b, ctx, func() (predecessor, error) {
			data, st, ch, err := s.conn.GetW(pred)
			return predecessor{data, st, ch}, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		predWatch := pw.ch
		if l := b.cfg.logger; l != nil && l.Enabled(ctx, slog.LevelDebug) {
			l.LogAttrs(ctx, slog.LevelDebug, "zookeeper: candidate waits", slog.String("election", c.Election),
				slog.String("znode", name), slog.Int("place", idx), slog.String("predecessor", cands[idx-1].name),
				slog.String("predecessor_identity", string(pw.data)), slog.String("predecessor_session", fmt.Sprintf("%#x", pw.stat.EphemeralOwner)),
				slog.String("session", fmt.Sprintf("%#x", owner)), slog.String("first", cands[0].name))
		}
		if ownWatch, err = b.waitTurn(ctx, s, owner, predWatch, ownWatch, changed); err != nil {
			return nil, err
		}
	}
}

// readOwn lists the children of dir (leaving a children watch, which the
// lease uses if the candidate leads) and, with rearm set, reads the
// candidate's own znode path with a watch, in one round trip. While that
// watch is armed and has not fired, the znode (its owner and czxid) is as
// read then, so the listing alone is sent.
func (b *Backend) readOwn(ctx context.Context, s *session, in *intent, path string, rearm bool) (own, error) {
	dir := in.dir
	s.listen(in, dir)
	return do(b, ctx, func() (own, error) {
		if !rearm {
			kids, _, _, err := s.conn.ChildrenW(dir)
			return own{kids: kids}, err
		}
		kc := make(chan own, 1)
		go func() {
			kids, _, _, err := s.conn.ChildrenW(dir)
			kc <- own{kids: kids, err: err}
		}()
		var me own
		_, stat, watch, err := s.conn.GetW(path)
		me.stat, me.watch = stat, watch
		ls := <-kc
		me.kids = ls.kids
		if err == nil {
			err = ls.err
		}
		return me, err
	}, nil)
}

// waitTurn waits until the predecessor's watch fires, the candidate's own
// znode changes, or its session (owner) reconnects; then the candidate looks
// again. It returns the own watch still armed (nil once it fired), or why
// the candidate can no longer lead.
func (b *Backend) waitTurn(ctx context.Context, s *session, owner int64, pred, ownWatch <-chan zk.Event, changed <-chan struct{}) (<-chan zk.Event, error) {
	for {
		select {
		case <-pred:
			return ownWatch, nil
		case ev := <-ownWatch:
			if ev.Type == zk.EventNodeDeleted {
				return nil, errVanished
			}
			return nil, nil
		case <-changed:
			now, ch := s.state()
			switch {
			case now.closed:
				return nil, errClosed
			case now.id != owner:
				return nil, errSessionEnded
			case !now.up:
				changed = ch // wait for the session to come back
			default:
				return ownWatch, nil // reconnected: look again
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.done:
			return nil, errClosed
		}
	}
}
