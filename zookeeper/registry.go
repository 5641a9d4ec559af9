package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/backend"
)

// Where the registry of candidates lives (see the package documentation):
// <Prefix>/_c_candidates/<election>/_c_entry-<uuid>-<seq>, the uuid unique
// to its create (Curator's protection: see createProtected). Election
// segments never start with "_c_", so the registry is no election's znode,
// and no entry is a child election's znode; Curator never lists it, as it
// is no latch path.
const (
	registryRoot = protectedPrefix + "candidates"
	entryPrefix  = protectedPrefix + "entry-"
)

// registryPath returns the znode of election's registry.
func (b *Backend) registryPath(election string) string {
	return b.cfg.prefix + "/" + registryRoot + "/" + election
}

// registration implements [backend.Registration]: an EPHEMERAL_SEQUENTIAL
// znode of the Backend's session of the candidate's TTL.
type registration struct {
	b    *Backend
	c    backend.Candidate
	path string
}

// Register implements [backend.Registry]. The entry is an ephemeral znode
// of the session the candidate's Campaigns use: it lives as long as that
// session, and Close ends it.
func (b *Backend) Register(ctx context.Context, c backend.Candidate, aside bool) (backend.Registration, error) {
	if err := validateElection(c.Election); err != nil {
		return nil, err
	}
	if err := backend.ValidateIdentity(c.Identity); err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	s, err := b.campaignSession(ctx, c.TTL)
	if err != nil {
		return nil, wrap("register", c.Election, err)
	}
	dir := b.registryPath(c.Election)
	data := []byte(backend.EncodeEntry(backend.Entry{Identity: c.Identity, Priority: c.Priority, Aside: aside}))
	for attempt := 0; ; attempt++ {
		if err := b.ensurePath(ctx, s, dir); err != nil {
			return nil, wrap("register", c.Election, mapErr(b.done, err))
		}
		path, err := b.createProtected(ctx, s, dir, entryPrefix+newUUID()+"-", "", data)
		if errors.Is(err, zk.ErrNoNode) && attempt < 2 {
			b.dirs.forget(dir) // a container reaped since it was known
			continue
		}
		if err != nil {
			return nil, wrap("register", c.Election, mapErr(b.done, err))
		}
		return &registration{b: b, c: c, path: path}, nil
	}
}

// Entries implements [backend.Registry]: a sync, then a listing and a read
// of each entry.
func (b *Backend) Entries(ctx context.Context, election string) ([]backend.Entry, error) {
	if err := validateElection(election); err != nil {
		return nil, err
	}
	s, err := b.reader(ctx)
	if err != nil {
		return nil, wrap("entries", election, err)
	}
	dir := b.registryPath(election)
	if _, err := do(b, ctx, func() (string, error) { return s.conn.Sync(dir) }, nil); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, wrap("entries", election, mapErr(b.done, err))
	}
	list, _, err := b.entries(ctx, s, dir, false)
	if err != nil {
		return nil, wrap("entries", election, mapErr(b.done, err))
	}
	return list, nil
}

// entries lists the entries under dir; with watch set, it also returns
// the watches that fire when one is added, removed or changed.
func (b *Backend) entries(ctx context.Context, s *session, dir string, watch bool) ([]backend.Entry, []<-chan zk.Event, error) {
	type kids struct {
		names []string
		ch    <-chan zk.Event
	}
	k, err := do(b, ctx, func() (kids, error) {
		if watch {
			names, _, ch, err := s.conn.ChildrenW(dir)
			if errors.Is(err, zk.ErrNoNode) {
				var ok bool
				ok, _, ch, err = s.conn.ExistsW(dir)
				if err == nil && ok {
					return kids{}, errRetry // created meanwhile
				}
			}
			return kids{names, ch}, err
		}
		names, _, err := s.conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			err = nil
		}
		return kids{names: names}, err
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	var chs []<-chan zk.Event
	if k.ch != nil {
		chs = append(chs, k.ch)
	}
	list := make([]backend.Entry, 0, len(k.names))
	for _, name := range k.names {
		if !strings.HasPrefix(name, entryPrefix) {
			continue
		}
		type node struct {
			data []byte
			ch   <-chan zk.Event
		}
		n, err := do(b, ctx, func() (node, error) {
			if watch {
				data, _, ch, err := s.conn.GetW(dir + "/" + name)
				return node{data, ch}, err
			}
			data, _, err := s.conn.Get(dir + "/" + name)
			return node{data: data}, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since the listing
		}
		if err != nil {
			return nil, nil, err
		}
		if n.ch != nil {
			chs = append(chs, n.ch)
		}
		en, err := backend.DecodeEntry(string(n.data))
		if err != nil {
			continue // not written by elector
		}
		en.ID = name
		list = append(list, en)
	}
	return list, chs, nil
}

// errRetry asks the watch loop to read again at once.
var errRetry = errors.New("read again")

// WatchEntries implements [backend.Registry] with ZooKeeper watches on the
// registry's children and on each entry.
func (b *Backend) WatchEntries(ctx context.Context, election string, fn func([]backend.Entry)) error {
	if err := validateElection(election); err != nil {
		return err
	}
	s, err := b.reader(ctx)
	if err != nil {
		return wrap("watch entries", election, err)
	}
	dir := b.registryPath(election)
	for {
		list, chs, err := b.entries(ctx, s, dir, true)
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			return wrap("watch entries", election, mapErr(b.done, err))
		}
		fn(list)
		if err := b.awaitAny(ctx, chs); err != nil {
			return wrap("watch entries", election, err)
		}
	}
}

// awaitAny waits until one of chs fires, ctx ends or b is closed.
func (b *Backend) awaitAny(ctx context.Context, chs []<-chan zk.Event) error {
	fired := make(chan zk.Event, 1)
	stop := make(chan struct{})
	defer close(stop)
	for _, ch := range chs {
		go func() {
			select {
			case ev := <-ch:
				select {
				case fired <- ev:
				default:
				}
			case <-stop:
			}
		}()
	}
	select {
	case ev := <-fired:
		if ev.Type == zk.EventNotWatching {
			if b.isClosed() {
				return errClosed
			}
			return fmt.Errorf("watch ended: %w", ev.Err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.done:
		return errClosed
	}
}

func (r *registration) ID() string { return r.path[strings.LastIndexByte(r.path, '/')+1:] }

func (r *registration) SetAside(ctx context.Context, aside bool) error {
	b, c := r.b, r.c
	s, err := b.reader(ctx)
	if err != nil {
		return wrap("register", c.Election, err)
	}
	data := []byte(backend.EncodeEntry(backend.Entry{Identity: c.Identity, Priority: c.Priority, Aside: aside}))
	_, err = do(b, ctx, func() (*zk.Stat, error) { return s.conn.Set(r.path, data, -1) }, nil)
	if errors.Is(err, zk.ErrNoNode) {
		err = fmt.Errorf("entry %s: %w", r.path, backend.ErrLost)
	}
	if err != nil {
		return wrap("register", c.Election, mapErr(b.done, err))
	}
	return nil
}

// Refresh checks that the entry still exists: its session keeps it alive.
func (r *registration) Refresh(ctx context.Context) error {
	b := r.b
	s, err := b.reader(ctx)
	if err != nil {
		return wrap("refresh entry", r.c.Election, err)
	}
	ok, err := do(b, ctx, func() (bool, error) {
		ok, _, err := s.conn.Exists(r.path)
		return ok, err
	}, nil)
	if err == nil && !ok {
		err = fmt.Errorf("entry %s: %w", r.path, backend.ErrLost)
	}
	if err != nil {
		return wrap("refresh entry", r.c.Election, mapErr(b.done, err))
	}
	return nil
}

func (r *registration) Withdraw(ctx context.Context) error {
	b := r.b
	s, err := b.reader(ctx)
	if err != nil {
		return wrap("withdraw entry", r.c.Election, err)
	}
	_, err = do(b, ctx, func() (struct{}, error) { return struct{}{}, s.conn.Delete(r.path, -1) }, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return wrap("withdraw entry", r.c.Election, mapErr(b.done, err))
	}
	return nil
}

var _ backend.Registry = (*Backend)(nil)
