package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/internal/wait"
)

// ownWatch closes a lease's Lost when its candidate key is deleted, for
// every lease of a Backend through one etcd watch on the Backend's key
// prefix (deletes only): a held election then costs no goroutine and no
// watch of its own, whatever their number (before, each cost two
// goroutines and about 11 KB). Deletes of keys this Backend does not hold
// are dropped on arrival; the stream runs only while some key is held.
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
	stop context.CancelFunc
	gen  int // the running stream's generation; 0: none runs
	runs int // streams started
}

// register watches l's key for deletes at revisions >= rev. The caller
// holds b.mu and has checked that the Backend is open.
func (w *ownWatch) register(l *lease, rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys == nil {
		w.keys = map[string]*lease{}
	}
	w.keys[l.key] = l
	l.stop = func() { w.drop(l) }
	switch {
	case w.gen == 0:
		w.start(rev)
	case rev <= w.seen:
		w.b.wg.Go(func() { w.check(l) })
	}
}

// drop stops watching l's key; the stream ends with the last key.
func (w *ownWatch) drop(l *lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys[l.key] != l {
		return
	}
	delete(w.keys, l.key)
	if len(w.keys) == 0 && w.stop != nil {
		w.stop()
		w.stop, w.gen = nil, 0
	}
}

// start runs a stream from revision from; w.mu is held.
func (w *ownWatch) start(from int64) {
	ctx, cancel := context.WithCancel(w.b.base)
	w.runs++
	w.seen, w.stop, w.gen = from-1, cancel, w.runs
	gen := w.gen
	w.b.wg.Go(func() { w.run(ctx, gen, from) })
}

// run delivers the deletes of stream generation gen from revision from
// until ctx ends.
func (w *ownWatch) run(ctx context.Context, gen int, from int64) {
	for ctx.Err() == nil {
		wch := w.b.cli.Watch(ctx, w.b.set.prefix, clientv3.WithPrefix(), clientv3.WithRev(from),
			clientv3.WithFilterPut(), clientv3.WithProgressNotify())
		compacted, delivered := false, false
		for wr := range wch {
			if wr.CompactRevision != 0 {
				compacted = true
			}
			if wr.Err() != nil {
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
		if l := w.keys[string(ev.Kv.Key)]; l != nil && ev.Kv.ModRevision > l.rev {
			l.markLost()
		}
		from = max(from, ev.Kv.ModRevision+1)
	}
	if wr.IsProgressNotify() {
		from = max(from, wr.Header.Revision+1)
	}
	if w.gen == gen {
		w.seen = max(w.seen, from-1)
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
		resp, err := w.b.cli.Get(ctx, w.b.set.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
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
				w.seen = max(w.seen, rev)
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

// loseAll closes every registered lease's Lost: the client is closed, so
// no delete can be seen any more.
func (w *ownWatch) loseAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.keys {
		l.markLost()
	}
}
