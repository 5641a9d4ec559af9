package etcd

import (
	"cmp"
	"context"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/internal/wait"
)

// ownWatch closes a lease's Lost when its candidate key is deleted.
//
// With [Options.Prefix] set, every lease of a Backend shares one etcd watch
// on the prefix (deletes only): a held election then costs no goroutine and
// no watch of its own, whatever their number (a watch per lease costs two
// goroutines and about 11 KB). Deletes of keys this Backend does not hold
// are dropped on arrival; the stream runs only while some key is held.
// Without a Prefix the keys sit at the root of the keyspace, and a shared
// stream would carry every delete of the cluster (and need permission on
// all of it): each lease then watches its own key (watchOwn). A shared
// stream that fails for another reason than a compaction (e.g. permission
// denied on the prefix) hands its leases to watches of their own, from the
// revision it had reached.
//
// seen is the revision up to which the stream has delivered every delete.
// A lease registered with a revision at or below seen (the stream may have
// delivered its key's delete before the lease was registered) is checked
// by a read of its key. A stream that ends on its own is resumed after the
// last revision it delivered; one whose history was compacted is replaced
// by a read of every registered key, then a stream from that read's
// revision.
type ownWatch struct {
	b *Backend

	mu   sync.Mutex
	keys map[string]*lease // by candidate key
	seen int64             // every delete at a revision <= seen was delivered
	from int64             // the running stream reports deletes from this revision
	stop context.CancelFunc
	gen  int // the running stream's generation; 0: none runs
	runs int // streams started
	// recent remembers, by key, the revision of the newest of the last
	// recentMax deletes the stream delivered (ring in delivery order;
	// evicted: the highest revision forgotten since the stream began), so
	// that a lease registered late learns of its key's delete without a
	// read.
	recent  map[string]int64
	ring    []recentDel
	head    int
	evicted int64
	// idleSince is when the last key was dropped; the stream lingers for
	// lingerFor after it (lingering: its goroutine waits), so that short
	// terms one after another share one stream.
	idleSince time.Time
	lingering bool
	lingerFor time.Duration // 0: the constant lingerFor
	// perLease is set without a Prefix, or once a shared stream failed:
	// each lease then watches its own key.
	perLease bool
	// changed is closed (and cleared) when gen or seen changes; nil until
	// a test asks for it with next.
	changed chan struct{}
}

// changes closes changed, after a change of gen or seen; w.mu is held.
func (w *ownWatch) changes() {
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// next returns a channel that the next change of gen or seen closes, for
// a test that waits for the stream to stop or to deliver a revision; w.mu
// is held.
func (w *ownWatch) next() <-chan struct{} {
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}

// register watches l's key for deletes at revisions >= rev. The caller
// holds b.mu and has checked that the Backend is open.
func (w *ownWatch) register(l *lease, rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.perLease || w.b.cfg.prefix == "" {
		w.watchAlone(l, rev)
		return
	}
	if w.keys == nil {
		w.keys = map[string]*lease{}
	}
	w.keys[l.key] = l
	l.stop = func() { w.drop(l) }
	switch {
	case w.gen == 0:
		w.start(rev)
	case rev > w.seen:
		// The stream has delivered nothing from rev on yet.
	case w.recent[l.key] > l.rev:
		l.markLost() // deleted since it was created, before registering
	case rev < w.from || w.evicted >= rev:
		// A delete of the key may have been delivered and forgotten, or
		// precede the stream: read the key.
		w.b.wg.Go(func() { w.check(l) })
	}
}

// recentDel is one delete in ownWatch.ring.
type recentDel struct {
	key string
	rev int64
}

// recentMax is how many delivered deletes ownWatch remembers.
const recentMax = 4096

// lingerFor is how long a shared stream outlives the last key it watched,
// unless ownWatch.lingerFor says otherwise (tests).
const lingerFor = time.Minute

// remember records a delivered delete of key at rev; w.mu is held.
func (w *ownWatch) remember(key string, rev int64) {
	if w.recent == nil {
		w.recent = map[string]int64{}
	}
	if len(w.ring) < recentMax {
		w.ring = append(w.ring, recentDel{key, rev})
	} else {
		old := w.ring[w.head]
		if w.recent[old.key] == old.rev {
			delete(w.recent, old.key)
		}
		w.evicted = max(w.evicted, old.rev)
		w.ring[w.head] = recentDel{key, rev}
		w.head = (w.head + 1) % recentMax
	}
	w.recent[key] = rev
}

// forget clears what the stream remembered, for a stream that starts
// afresh from revision from; w.mu is held.
func (w *ownWatch) forget(from int64) {
	w.recent, w.ring, w.head, w.evicted = nil, nil, 0, 0
	w.from, w.seen = from, from-1
	w.changes()
}

// drop stops watching l's key; the stream ends with the last key.
func (w *ownWatch) drop(l *lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys[l.key] != l {
		return
	}
	delete(w.keys, l.key)
	if len(w.keys) > 0 || w.gen == 0 {
		return
	}
	w.idleSince = time.Now()
	if !w.lingering {
		w.lingering = true
		gen := w.gen
		w.b.wg.Go(func() { w.linger(gen) })
	}
}

// linger stops stream generation gen once it has watched no key for
// lingerFor, or returns when keys came back or the Backend closed.
func (w *ownWatch) linger(gen int) {
	w.mu.Lock()
	period := cmp.Or(w.lingerFor, lingerFor)
	w.mu.Unlock()
	d := period
	for wait.Sleep(w.b.base, d) {
		w.mu.Lock()
		if w.gen != gen || len(w.keys) > 0 {
			w.lingering = false
			w.mu.Unlock()
			return
		}
		if d = period - time.Since(w.idleSince); d <= 0 {
			w.stop()
			w.stop, w.gen, w.lingering = nil, 0, false
			w.changes()
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// start runs a stream from revision from; w.mu is held.
func (w *ownWatch) start(from int64) {
	ctx, cancel := context.WithCancel(w.b.base)
	w.runs++
	w.forget(from)
	w.stop, w.gen = cancel, w.runs
	w.changes()
	gen := w.gen
	w.b.wg.Go(func() { w.run(ctx, gen, from) })
}

// run delivers the deletes of stream generation gen from revision from
// until ctx ends.
func (w *ownWatch) run(ctx context.Context, gen int, from int64) {
	for ctx.Err() == nil {
		wch := w.b.cli.Watch(ctx, w.b.cfg.prefix, clientv3.WithPrefix(), clientv3.WithRev(from),
			clientv3.WithFilterPut(), clientv3.WithProgressNotify())
		compacted, delivered, failed := false, false, false
		for wr := range wch {
			if wr.CompactRevision != 0 {
				compacted = true
			}
			if wr.Err() != nil {
				failed = !compacted // ctx's end and a closed client are told apart below
				break
			}
			delivered = true
			from = w.deliver(gen, wr, from)
		}
		switch {
		case ctx.Err() != nil:
			return
		case w.b.clientClosed() != nil:
			w.loseAll()
			return
		case failed:
			w.handOff(gen)
			return
		case compacted:
			rev, ok := w.resync(ctx, gen)
			if !ok {
				return
			}
			from = rev + 1
		case !delivered:
			// Ended at once, not compacted: do not spin.
			if !wait.Sleep(ctx, 100*time.Millisecond) {
				return
			}
		}
	}
}

// deliver closes Lost of the leases whose keys wr deletes, and returns the
// revision to resume the stream from. Events and seen change under one
// lock, so register never misses a delete.
func (w *ownWatch) deliver(gen int, wr clientv3.WatchResponse, from int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range wr.Events {
		key := string(ev.Kv.Key)
		if l := w.keys[key]; l != nil && ev.Kv.ModRevision > l.rev {
			l.markLost()
		}
		if w.gen == gen {
			w.remember(key, ev.Kv.ModRevision)
		}
		from = max(from, ev.Kv.ModRevision+1)
	}
	if wr.IsProgressNotify() {
		from = max(from, wr.Header.Revision+1)
	}
	if w.gen == gen {
		w.seen = max(w.seen, from-1)
		w.changes()
	}
	return from
}

// check reads l's key once and closes Lost unless it is still l's.
func (w *ownWatch) check(l *lease) {
	ctx := w.b.base
	for {
		resp, err := w.b.cli.Get(ctx, l.key)
		switch {
		case err == nil:
			if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != l.rev {
				l.markLost()
			}
			return
		case ctx.Err() != nil || w.b.clientClosed() != nil:
			l.markLost()
			return
		}
		if !wait.Sleep(ctx, time.Second) {
			return
		}
	}
}

// resync reads every key under the prefix after the stream's history was
// compacted away, closes Lost of the registered leases whose key is gone
// or replaced, and returns the read's revision. It retries until ctx ends;
// if the client is closed, it closes every registered lease's Lost.
func (w *ownWatch) resync(ctx context.Context, gen int) (int64, bool) {
	for {
		resp, err := w.b.cli.Get(ctx, w.b.cfg.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err == nil {
			rev := resp.Header.Revision
			have := make(map[string]int64, len(resp.Kvs))
			for _, kv := range resp.Kvs {
				have[string(kv.Key)] = kv.CreateRevision
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			for k, l := range w.keys {
				// A key created after the read is the new stream's.
				if l.rev <= rev && have[k] != l.rev {
					l.markLost()
				}
			}
			if w.gen == gen {
				w.forget(rev + 1)
			}
			return rev, true
		}
		switch {
		case ctx.Err() != nil:
			return 0, false
		case w.b.clientClosed() != nil:
			w.loseAll()
			return 0, false
		}
		if !wait.Sleep(ctx, time.Second) {
			return 0, false
		}
	}
}

// handOff gives every registered lease a watch of its own, from the
// revision the failed stream of generation gen had reached, and makes
// later leases watch alone.
func (w *ownWatch) handOff(gen int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen != gen {
		return // dropped meanwhile
	}
	w.perLease = true
	for _, l := range w.keys {
		w.watchAlone(l, w.seen+1)
	}
	w.keys = nil
	w.stop()
	w.stop, w.gen = nil, 0
	w.forget(0) // reports the change
}

// watchAlone starts l's own watch from revision rev; w.mu is held.
func (w *ownWatch) watchAlone(l *lease, rev int64) {
	ctx, cancel := context.WithCancel(w.b.base)
	l.stop = cancel
	w.b.wg.Go(func() { l.watchOwn(ctx, rev) })
}

// watchOwn closes Lost when l's candidate key is deleted at revision rev
// or later. It runs until ctx ends: the lease is finished or the Backend
// closed.
func (l *lease) watchOwn(ctx context.Context, rev int64) {
	for {
		wch := l.b.cli.Watch(ctx, l.key, clientv3.WithRev(rev), clientv3.WithFilterPut())
		for wr := range wch {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					l.markLost()
					return
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		// The watch ended on its own (compaction, a closed client): read
		// the key, and resume from there if it is still ours.
		resp, err := l.b.cli.Get(ctx, l.key)
		if ctx.Err() != nil {
			return
		}
		if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != l.rev {
			l.markLost()
			return
		}
		rev = resp.Header.Revision + 1
	}
}

// loseAll closes every registered lease's Lost: the client is closed, so
// no delete can be seen any more.
func (w *ownWatch) loseAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.keys {
		l.markLost()
	}
}
