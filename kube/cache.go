package kube

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leaderkit/elector/backend"
)

// followRetry is the longest wait before the Backend's watch of its
// namespace is started again after it failed; the wait is drawn at random
// (see backoff), so that the members of a group whose watches one
// apiserver restart broke do not come back at once.
const followRetry = time.Second

// leaseCache is the Backend's one watch of its namespace's Leases, as a
// client-go informer keeps one: it lists them once, then watches from the
// list's resourceVersion, and resumes from the last resourceVersion it saw
// (an event's, or a bookmark's in a quiet namespace) after the watch ends,
// so that an apiserver restart costs one watch request, and a List only
// when the apiserver can no longer resume (410 Gone, after a long outage).
// Waiting Campaigns and Watches, and Leaders while the watch runs, read
// the Leases from it and wait on its events: a waiting election costs no
// request of its own. The Backend's own writes enter it as they are
// answered (see wrote), so its readers see them without waiting for the
// event. Its events also end held leases that another
// writer took over (see checkHeld).
//
// Each entry keeps when its record (the fields client-go compares) was
// first seen as it is now: the holder sent it no later than that, so a
// waiting candidate may count the holder's duration from there (see
// # Safety). A Campaign acting on an entry the watch has not yet brought up
// to date loses nothing: its take-over is conditional on the entry's
// resourceVersion.
type leaseCache struct {
	b *Backend

	mu      sync.Mutex
	synced  bool                     // the first List is in
	items   map[string]entry         // by Lease name
	changed map[string]chan struct{} // closed at the name's next change
	attempt chan struct{}            // closed and replaced after each List
	listErr error                    // the last List's error
	open    bool                     // a watch runs: items are current
}

type entry struct {
	obj *coordinationv1.Lease
	key specKey
	at  time.Time // when the record in key was first seen
}

func newLeaseCache(b *Backend) *leaseCache {
	return &leaseCache{b: b, items: map[string]entry{}, changed: map[string]chan struct{}{}, attempt: make(chan struct{})}
}

// startCache starts the Backend's watch of its namespace unless it runs,
// and returns its cache.
func (b *Backend) startCache() *leaseCache {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.caching && !b.closed {
		b.caching = true
		b.bg.Go(b.cache.run)
	}
	return b.cache
}

// run lists and watches until the Backend is closed.
func (c *leaseCache) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.b.done
		cancel()
	}()
	rv, fails := "", 0
	for ctx.Err() == nil {
		started := time.Now()
		var ok bool
		rv, ok = c.once(ctx, rv)
		if ok && time.Since(started) >= followRetry {
			fails = 0
		} else {
			fails++
		}
		t := time.NewTimer(backoff(fails))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// backoff returns the wait before the watch starts again after fails
// failed attempts in a row: random in [0, followRetry/4) after a watch
// that ran (every member's watch ends at an apiserver restart), else
// random in [d/2, d) for d doubling from followRetry/4 up to followRetry.
func backoff(fails int) time.Duration {
	base := followRetry / 4
	if fails == 0 {
		return rand.N(base)
	}
	d := min(base<<min(fails-1, 8), followRetry)
	return d/2 + rand.N(d/2)
}

// once watches from resourceVersion rv (listing first when rv is "") until
// the watch ends or ctx does. It returns the resourceVersion to resume
// from ("" to list again), and whether a watch ran.
func (c *leaseCache) once(ctx context.Context, rv string) (string, bool) {
	if rv == "" {
		var err error
		if rv, err = c.relist(ctx); err != nil {
			return "", false
		}
	}
	c.b.requests.Add(1)
	w, err := c.b.leases.Watch(ctx, metav1.ListOptions{
		ResourceVersion:     rv,
		AllowWatchBookmarks: true,
		TimeoutSeconds:      new(int64(watchSeconds)),
	})
	if err != nil {
		return resumeFrom(rv, err), false
	}
	defer w.Stop()
	c.setOpen(true)
	defer c.setOpen(false)
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return resumeFrom(rv, apierrors.FromObject(ev.Object)), true
		}
		obj, ok := ev.Object.(*coordinationv1.Lease)
		if !ok {
			return rv, true
		}
		rv = obj.ResourceVersion
		if ev.Type == watch.Bookmark {
			continue
		}
		c.apply(ev.Type == watch.Deleted, obj, time.Now())
		for _, l := range c.b.heldNamed(obj.Name) {
			if !rvAfter(obj.ResourceVersion, l.won) {
				continue // a write from before l won it
			}
			if ev.Type == watch.Deleted || !l.o.owns(obj) {
				l.foreign()
				continue
			}
			l.checkPreferred(obj)
		}
	}
	return rv, true
}

func (c *leaseCache) setOpen(open bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open = open
}

// apply records one event of the Lease obj, and wakes the waiters of its
// name.
func (c *leaseCache) apply(deleted bool, obj *coordinationv1.Lease, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e, ok := c.items[obj.Name]; {
	case ok && rvAfter(e.obj.ResourceVersion, obj.ResourceVersion):
		// This Backend's own later write is in already (see wrote).
	case deleted:
		delete(c.items, obj.Name)
	default:
		c.put(obj, now)
	}
	if ch, ok := c.changed[obj.Name]; ok {
		close(ch)
		delete(c.changed, obj.Name)
	}
}

// wrote records obj, as a write of this Backend returned it, unless the
// entry already holds a later version; it wakes the waiters of its name.
func (c *leaseCache) wrote(obj *coordinationv1.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.synced {
		return
	}
	if e, ok := c.items[obj.Name]; ok && !rvAfter(obj.ResourceVersion, e.obj.ResourceVersion) {
		return
	}
	c.put(obj, time.Now())
	if ch, ok := c.changed[obj.Name]; ok {
		close(ch)
		delete(c.changed, obj.Name)
	}
}

// put stores obj, keeping when its record was first seen if the entry
// already has that record; c.mu is held.
func (c *leaseCache) put(obj *coordinationv1.Lease, now time.Time) {
	k := keyOf(obj)
	e, ok := c.items[obj.Name]
	if !ok || e.key != k {
		e.key, e.at = k, now
	}
	e.obj = obj
	c.items[obj.Name] = e
}

// relist lists the namespace's Leases (in pages of listPage, one
// snapshot), replaces the entries with them, finishes the held leases the
// list shows taken over, and returns the list's resourceVersion.
func (c *leaseCache) relist(ctx context.Context) (string, error) {
	var items []coordinationv1.Lease
	rv := ""
	opts := metav1.ListOptions{Limit: listPage}
	for {
		ll, err := bounded(c.b, ctx, func(ctx context.Context) (*coordinationv1.LeaseList, error) {
			return c.b.leases.List(ctx, opts)
		})
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			items, opts = nil, metav1.ListOptions{}
			continue
		}
		if err != nil {
			c.listed(err)
			return "", err
		}
		if rv == "" {
			rv = ll.ResourceVersion
		}
		items = append(items, ll.Items...)
		if ll.Continue == "" {
			break
		}
		opts.Continue = ll.Continue
	}
	now := time.Now()
	present := make(map[string]*coordinationv1.Lease, len(items))
	c.mu.Lock()
	for i := range items {
		present[items[i].Name] = &items[i]
		c.put(&items[i], now)
	}
	for name := range c.items {
		if present[name] == nil {
			delete(c.items, name)
		}
	}
	for name, ch := range c.changed {
		close(ch)
		delete(c.changed, name)
	}
	c.synced = true
	c.mu.Unlock()
	c.listed(nil)
	c.b.listed.Store(int64(len(items)))
	for _, l := range c.b.heldLeases() {
		obj, ok := present[l.name]
		switch {
		case (!ok || !l.o.owns(obj)) && !l.newer(rv):
			l.foreign()
		case ok:
			l.checkPreferred(obj)
		}
	}
	return rv, nil
}

// listed records the outcome of a List and wakes those waiting for one.
func (c *leaseCache) listed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listErr = err
	close(c.attempt)
	c.attempt = make(chan struct{})
}

// awaitSynced returns nil once the first List is in, the error of the next
// List when it fails, ctx.Err() when ctx ends, or an error wrapping
// [backend.ErrClosed] when the Backend is closed.
func (c *leaseCache) awaitSynced(ctx context.Context) error {
	c.mu.Lock()
	synced, attempt := c.synced, c.attempt
	c.mu.Unlock()
	if synced {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.b.done:
		return backend.ErrClosed
	case <-attempt:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.synced {
		return nil
	}
	return fmt.Errorf("listing leases of namespace %s: %w", c.b.ns, c.listErr)
}

// get returns the entry of the Lease name (false: there is no such Lease)
// and a channel closed at its next change.
func (c *leaseCache) get(name string) (entry, bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.changed[name]
	if !ok {
		ch = make(chan struct{})
		c.changed[name] = ch
	}
	e, ok := c.items[name]
	return e, ok, ch
}

// current returns the entries of names while a watch runs (the entries
// are then as the apiserver last sent them), or false.
func (c *leaseCache) current(names []string) ([]entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.synced || !c.open {
		return nil, false
	}
	out := make([]entry, len(names))
	for i, n := range names {
		out[i] = c.items[n]
	}
	return out, true
}

// running reports whether the Backend's watch has been started.
func (b *Backend) running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.caching
}

// cachedHolders reports the holders of elections (Lease names names) from
// the Backend's watch, as Leader does, when it runs; else false. It sends
// no request.
func (b *Backend) cachedHolders(elections, names []string) ([]backend.Holder, []error, bool) {
	if !b.running() {
		return nil, nil, false
	}
	es, ok := b.cache.current(names)
	if !ok {
		return nil, nil, false
	}
	now := time.Now()
	hs, errs := make([]backend.Holder, len(names)), make([]error, len(names))
	for i, e := range es {
		hs[i], errs[i] = holderSeen(elections[i], e.obj, e.at, now)
	}
	return hs, errs, true
}

// holderSeen reports the holder of election from its Lease l (nil: there
// is none), whose record was first seen at seen, as read at now.
func holderSeen(election string, l *coordinationv1.Lease, seen, now time.Time) (backend.Holder, error) {
	h := holder(election, l)
	if h.IsZero() {
		return backend.Holder{}, fmt.Errorf("kube: leader %q: %w", election, backend.ErrNoLeader)
	}
	exp := seen.Add(durationOf(l))
	if !now.Before(exp) {
		return backend.Holder{}, fmt.Errorf("kube: leader %q: %w: the Lease of %q expired", election, backend.ErrNoLeader, h.Identity)
	}
	h.TTL = exp.Sub(now)
	return h, nil
}
