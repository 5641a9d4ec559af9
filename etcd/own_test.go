package etcd

import (
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// deleteFor deletes l's key as another client would and fails t unless
// l's Lost closes within 10 s; what names the situation.
func deleteFor(t *testing.T, cli *clientv3.Client, l *lease, what string) {
	t.Helper()
	if _, err := cli.Delete(testCtx(t), l.key); err != nil {
		t.Fatal(err)
	}
	if !lostWithin(l, 10*time.Second) {
		t.Fatalf("%s: Lost still open 10 s after a foreign delete of the candidate key", what)
	}
}

// ownPrefix is the Prefix of the shared-stream tests.
const ownPrefix = "/elector-own-test/"

// lostWithin reports whether l's Lost is closed now or closes within d.
func lostWithin(l *lease, d time.Duration) bool {
	select {
	case <-l.Lost():
		return true
	default:
	}
	select {
	case <-l.Lost():
		return true
	case <-time.After(d):
		return false
	}
}

// TestOwnWatchOneStream: many held elections share one watch stream; a
// foreign delete of one key closes that lease's Lost and no other's, and
// the stream stops with the last lease. Not t.Parallel: a Campaign must
// find the stream still lingering, 100 ms after the last release, which
// other tests' load can make it miss.
func TestOwnWatchOneStream(t *testing.T) {
	cli := testClient(t)
	b := testBackend(t, cli, &Options{Prefix: ownPrefix})
	name := testName(t)
	var ls []*lease
	for i := range 20 { // unrenewed: none may lapse but the one deleted
		ls = append(ls, mustCampaign(t, b, unrenewed(fmt.Sprintf("%s-%d", name, i), "a")))
	}
	b.own.mu.Lock()
	runs, keys := b.own.runs, len(b.own.keys)
	b.own.mu.Unlock()
	if runs != 1 || keys != 20 {
		t.Fatalf("20 held elections: %d streams started, %d keys watched; want 1 and 20", runs, keys)
	}
	deleteFor(t, cli, ls[7], "one of 20 held keys")
	for i, l := range ls {
		if i != 7 && lostWithin(l, 0) {
			t.Errorf("lease %d lost after another lease's key was deleted", i)
		}
	}
	b.own.mu.Lock()
	b.own.lingerFor = 100 * time.Millisecond
	b.own.mu.Unlock()
	for _, l := range ls {
		_ = l.Release(testCtx(t))
	}
	b.own.mu.Lock()
	gen, keys := b.own.gen, len(b.own.keys)
	b.own.mu.Unlock()
	if gen == 0 || keys != 0 {
		t.Errorf("right after every release: stream generation %d, %d keys; want the stream lingering and 0 keys", gen, keys)
	}
	// Short terms one after another share the lingering stream.
	l := mustCampaign(t, b, cand(name+"-again", "a"))
	_ = l.Release(testCtx(t))
	b.own.mu.Lock()
	runs = b.own.runs
	b.own.mu.Unlock()
	if runs != 1 {
		t.Errorf("a term while the stream lingered started stream %d, want it to use stream 1", runs)
	}
	if !ownUntil(b, 10*time.Second, func(w *ownWatch) bool { return w.gen == 0 }) {
		t.Fatal("the stream still runs 10 s after its last key, lingering 100 ms")
	}
}

// ownUntil waits until cond, called with b.own.mu held, holds, looking
// again at each change of the stream's generation or delivered revision.
// It reports false if cond still does not hold after d.
func ownUntil(b *Backend, d time.Duration, cond func(w *ownWatch) bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		b.own.mu.Lock()
		ok, next := cond(&b.own), b.own.next()
		b.own.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-next:
		case <-deadline.C:
			return false
		}
	}
}

// TestOwnWatchLateRegistration: a lease registered after the stream
// delivered its key's delete (the race between a campaign's read and its
// registration) is still found lost, by a read of its key.
func TestOwnWatchLateRegistration(t *testing.T) {
	t.Parallel()
	cli := testClient(t)
	b := testBackend(t, cli, &Options{Prefix: ownPrefix})
	name := testName(t)
	keep := mustCampaign(t, b, unrenewed(name+"-keep", "a")) // keeps the stream running
	defer keep.Release(testCtx(t))
	l := mustCampaign(t, b, unrenewed(name, "a"))
	b.own.drop(l)
	resp, err := cli.Delete(testCtx(t), l.key)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the stream has delivered the delete (dropped: the key is
	// not registered), then register with the revision the campaign read.
	if !ownUntil(b, 10*time.Second, func(w *ownWatch) bool { return w.seen >= resp.Header.Revision }) {
		b.own.mu.Lock()
		seen := b.own.seen
		b.own.mu.Unlock()
		t.Fatalf("stream saw revision %d after 10 s, want %d", seen, resp.Header.Revision)
	}
	b.mu.Lock()
	b.own.register(l, l.rev+1)
	b.mu.Unlock()
	if !lostWithin(l, 0) {
		t.Fatal("a lease registered after its key's delete was delivered stays held (the delete is remembered)")
	}
	// The same once the delete was forgotten: a read of the key finds it.
	l.lost, l.lostOnce = make(chan struct{}), sync.Once{}
	b.mu.Lock()
	b.own.mu.Lock()
	delete(b.own.recent, l.key)
	b.own.evicted = resp.Header.Revision
	b.own.mu.Unlock()
	b.own.register(l, l.rev+1)
	b.mu.Unlock()
	if !lostWithin(l, 10*time.Second) {
		t.Fatal("a lease registered after its key's delete was delivered and forgotten stays held")
	}
	if lostWithin(keep, 0) {
		t.Error("the other lease was lost")
	}
}

// TestOwnWatchCompacted: a stream whose start revision was compacted away
// reads every registered key instead, finds the deleted one lost and keeps
// the others, then delivers later deletes. Not t.Parallel: it compacts the
// whole cluster's history, which would cancel another test's watch from an
// older revision.
func TestOwnWatchCompacted(t *testing.T) {
	cli := testClient(t)
	b := testBackend(t, cli, &Options{Prefix: ownPrefix})
	name := testName(t)
	a := mustCampaign(t, b, unrenewed(name+"-a", "a"))
	c := mustCampaign(t, b, unrenewed(name+"-c", "a"))
	// Take both off the Backend's stream, delete c's key while nothing
	// watches, and compact the history past it.
	b.own.drop(a)
	b.own.drop(c)
	b.own.mu.Lock()
	b.own.stop() // no lingering: the next stream starts from the past
	b.own.stop, b.own.gen = nil, 0
	b.own.mu.Unlock()
	if _, err := cli.Delete(testCtx(t), c.key); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(testCtx(t), "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(testCtx(t), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	// A fresh stream from a revision before the compaction.
	b.mu.Lock()
	b.own.register(a, a.rev+1)
	b.own.register(c, a.rev+1)
	b.mu.Unlock()
	if !lostWithin(c, 10*time.Second) {
		t.Fatal("a key deleted before a compaction the stream fell behind stays held")
	}
	if lostWithin(a, 0) {
		t.Fatal("a key still held was found lost after the compaction")
	}
	deleteFor(t, cli, a, "after the resync")
}

// TestOwnWatchWithoutPrefix: without a Prefix each lease watches its own
// key (a shared stream would carry the whole keyspace's deletes), and a
// foreign delete still ends the lease.
func TestOwnWatchWithoutPrefix(t *testing.T) {
	t.Parallel()
	cli := testClient(t)
	b := testBackend(t, cli, nil)
	l := mustCampaign(t, b, cand(testName(t), "a"))
	b.own.mu.Lock()
	runs := b.own.runs
	b.own.mu.Unlock()
	if runs != 0 {
		t.Fatalf("without a Prefix: %d shared streams started, want 0", runs)
	}
	deleteFor(t, cli, l, "without a Prefix")
}

// TestOwnWatchHandOff: when the shared stream fails (as on a permission
// denied), its leases get watches of their own, from the revision it had
// reached, and later leases watch alone.
func TestOwnWatchHandOff(t *testing.T) {
	t.Parallel()
	cli := testClient(t)
	b := testBackend(t, cli, &Options{Prefix: ownPrefix})
	name := testName(t)
	a := mustCampaign(t, b, cand(name+"-a", "a"))
	b.own.mu.Lock()
	gen := b.own.gen
	b.own.mu.Unlock()
	b.own.handOff(gen)
	c := mustCampaign(t, b, cand(name+"-c", "a"))
	b.own.mu.Lock()
	perLease, keys, running := b.own.perLease, len(b.own.keys), b.own.gen
	b.own.mu.Unlock()
	if !perLease || keys != 0 || running != 0 {
		t.Fatalf("after a hand-off: perLease %v, %d shared keys, stream %d; want true, 0, 0", perLease, keys, running)
	}
	deleteFor(t, cli, a, "a lease handed off")
	deleteFor(t, cli, c, "a lease after the hand-off")
}
