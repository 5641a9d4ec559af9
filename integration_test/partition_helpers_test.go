package integration_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/etcd"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/partition"
	"github.com/leaderkit/elector/redlock"
	"github.com/leaderkit/elector/zookeeper"
)

// partStore makes the Backends of the members of one partition test, each
// as a separate process would have it (its own clients), and crashes them:
// the member's connections die without a word to the store, so its leases
// stay until they expire.
type partStore struct {
	name string
	ttl  time.Duration
	make func(tb testing.TB) (b backend.Backend, crash func())
}

// partTTL is the lease TTL of the partition tests on real servers: with
// dozens of leases per process on a shared 2-core machine, 2 s leaves too
// little room for a renewal's round trip under load.
const partTTL = 5 * time.Second

// partStores returns the memory store and the real backends; the real ones
// skip (fail under CI) when their servers are not configured.
func partStores() []partStore {
	return []partStore{
		{name: "memory", ttl: 2 * time.Second, make: memoryMember()},
		{name: "redlock", ttl: partTTL, make: func(tb testing.TB) (backend.Backend, func()) {
			cs := redlockClients(tb)
			// Dozens of campaigns at once from each member, on a loaded
			// machine: allow each node more than the default 100 ms.
			b, err := redlock.New(cs, &redlock.Options{RequestTimeout: 500 * time.Millisecond})
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = b.Close() })
			return b, func() {
				for _, c := range cs {
					_ = c.Close()
				}
			}
		}},
		{name: "etcd", ttl: partTTL, make: func(tb testing.TB) (backend.Backend, func()) {
			cli := etcdClient(tb, testenv.EtcdEndpoints(tb)...)
			b, err := etcd.New(cli, nil)
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = b.Close() })
			return b, func() { _ = cli.Close() }
		}},
		{name: "zookeeper", ttl: partTTL, make: func(tb testing.TB) (backend.Backend, func()) {
			d := &crashDialer{}
			b, err := zookeeper.New(testenv.ZKServers(tb), &zookeeper.Options{Prefix: zkPrefix, Dialer: d.dial})
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = b.Close() })
			return b, func() { d.crash() }
		}},
	}
}

func memoryMember() func(testing.TB) (backend.Backend, func()) {
	var (
		mu   sync.Mutex
		root *memory.Backend
	)
	return func(tb testing.TB) (backend.Backend, func()) {
		mu.Lock()
		defer mu.Unlock()
		if root == nil {
			root = memory.New()
		}
		b := root.Peer()
		tb.Cleanup(func() { _ = b.Close() })
		return b, b.Crash
	}
}

// partGroup returns a group name unique to this run.
func partGroup(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "part-it/" + prefix + "-" + hex.EncodeToString(b[:])
}

// partLedger records the members' callbacks and checks, as they happen, that
// no partition has two OnAssigned running at once and that tokens strictly
// increase per partition.
type partLedger struct {
	tb testing.TB
	mu sync.Mutex

	active  map[int]string
	last    map[int]uint64
	count   int
	ended   map[string]bool
	revoked map[string]bool
	changed chan struct{} // closed and replaced when active changes
}

// forgetTokens drops the tokens seen so far: from now on each partition's
// tokens must increase from its next assignment on. A majority of Redis
// masters restarting empty loses the token counter, so the next token may
// be lower than the last (redlock package doc, # Safety); exclusion, which
// the ledger still checks, holds.
func (g *partLedger) forgetTokens() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.last)
}

func newPartLedger(tb testing.TB) *partLedger {
	return &partLedger{tb: tb, active: map[int]string{}, last: map[int]uint64{}, ended: map[string]bool{}, revoked: map[string]bool{},
		changed: make(chan struct{})}
}

func (g *partLedger) options(id string, ttl time.Duration) *partition.Options {
	key := func(a partition.Assignment) string { return fmt.Sprintf("%s %d %d", id, a.Partition, a.Token) }
	return &partition.Options{
		Identity: id,
		TTL:      ttl,
		Logger:   partLogger(id),
		OnAssigned: func(ctx context.Context, a partition.Assignment) {
			g.mu.Lock()
			if other, ok := g.active[a.Partition]; ok {
				g.tb.Errorf("partition %d assigned to %s (token %d) while %s still owns it", a.Partition, id, a.Token, other)
			}
			if a.Token <= g.last[a.Partition] {
				g.tb.Errorf("partition %d assigned to %s with token %d; want > %d", a.Partition, id, a.Token, g.last[a.Partition])
			}
			g.active[a.Partition], g.last[a.Partition] = id, a.Token
			g.count++
			g.changes()
			g.mu.Unlock()
			<-ctx.Done()
			g.mu.Lock()
			if g.active[a.Partition] == id {
				delete(g.active, a.Partition)
				g.changes()
			}
			g.ended[key(a)] = true
			g.mu.Unlock()
		},
		OnRevoked: func(a partition.Assignment, _ error) {
			g.mu.Lock()
			defer g.mu.Unlock()
			if !g.ended[key(a)] || g.revoked[key(a)] {
				g.tb.Errorf("OnRevoked(%s): returned %v, revoked before %v; want once, after OnAssigned returned", key(a), g.ended[key(a)], g.revoked[key(a)])
			}
			g.revoked[key(a)] = true
		},
	}
}

// changes wakes whoever waits for the owners to change; g.mu is held.
func (g *partLedger) changes() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *partLedger) owners(n int) []string {
	out, _ := g.ownersNext(n)
	return out
}

// ownersNext returns the owners of partitions 0 to n-1 and a channel that
// the next change of any owner closes.
func (g *partLedger) ownersNext(n int) ([]string, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, n)
	for p, id := range g.active {
		out[p] = id
	}
	return out, g.changed
}

func (g *partLedger) assignments() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.count
}

// partMember is one running partition.Assigner.
type partMember struct {
	id      string
	a       *partition.Assigner
	crash   func() // kills the member's connections; its Run may then fail
	crashed atomic.Bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run has returned
	err     error         // Run's result, once done is closed
}

func startPartMember(tb testing.TB, s partStore, group string, n int, opts *partition.Options) *partMember {
	tb.Helper()
	b, crash := s.make(tb)
	a, err := partition.New(b, group, n, opts)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &partMember{id: opts.Identity, a: a, cancel: cancel, done: make(chan struct{})}
	m.crash = func() { m.crashed.Store(true); crash() }
	go func() {
		m.err = a.Run(ctx)
		if ctx.Err() == nil && !m.crashed.Load() {
			tb.Errorf("%s: Run returned early: %v", m.id, m.err)
		}
		close(m.done)
	}()
	tb.Cleanup(func() { _ = m.stop() })
	return m
}

// stop ends m's Run, waits for it and returns its result.
func (m *partMember) stop() error {
	m.cancel()
	<-m.done
	return m.err
}

// placed returns the owner the placement gives each partition, given its
// current owners (nil: none).
func placed(group string, n int, ms []*partMember, current []string) []string {
	ids := partIDs(ms)
	out := make([]string, n)
	for p, i := range partition.Place(group, n, ids, current) {
		out[p] = ids[i]
	}
	return out
}

func partIDs(ms []*partMember) []string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.id)
	}
	slices.Sort(ids)
	return ids
}

// settleBalanced waits until every partition is owned by one of ms, each
// holding its quota, and returns the owners then; it fails tb after limit.
func settleBalanced(tb testing.TB, g *partLedger, group string, n int, ms []*partMember, limit time.Duration) []string {
	tb.Helper()
	// As after a leave of everyone: no partition must stay where it was.
	return settleLeave(tb, g, group, n, ms, make([]string, n), limit)
}

// allOwned waits until each of partitions 0 to n-1 has an owner, looking
// again at each change of an owner, and returns how long that took; it
// fails tb after limit.
func allOwned(tb testing.TB, g *partLedger, n int, limit time.Duration) time.Duration {
	tb.Helper()
	began := time.Now()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for got, changed := g.ownersNext(n); slices.Contains(got, ""); got, changed = g.ownersNext(n) {
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("partitions unowned %v later: %d of %d", limit, strings.Count(strings.Join(g.owners(n), ",")+",", ",,"), n)
		}
	}
	return time.Since(began)
}

// settle waits until the ledger's owners equal want, looking again at each
// change of an owner, and returns how long that took; it fails tb after limit.
func settle(tb testing.TB, g *partLedger, want []string, limit time.Duration) time.Duration {
	tb.Helper()
	began := time.Now()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for got, changed := g.ownersNext(len(want)); !slices.Equal(got, want); got, changed = g.ownersNext(len(want)) {
		select {
		case <-changed:
		case <-deadline.C:
			got := g.owners(len(want))
			var off []string
			for p := range want {
				if got[p] != want[p] {
					off = append(off, fmt.Sprintf("%d: %q, placed on %q", p, got[p], want[p]))
				}
			}
			tb.Fatalf("partitions not owned as placed within %v: %d of %d differ:\n%s", limit, len(off), len(want), strings.Join(off, "\n"))
		}
	}
	return time.Since(began)
}

// settleLeave waits until the partitions are owned as the placement puts
// them after members left, given their owners before: every partition of a
// member still in ms stays with it, and those of the members gone are owned
// by members of ms, each holding its quota. Which member takes which of the
// leavers' partitions is left free: members place those from what they
// knew of who owned what, and may pick differently from the placement
// computed here from the exact owners — at no cost in balance or movement.
// It returns the owners then; it fails tb after limit.
func settleLeave(tb testing.TB, g *partLedger, group string, n int, ms []*partMember, before []string, limit time.Duration) []string {
	tb.Helper()
	ids := partIDs(ms)
	quotas := partition.Quotas(group, n, ids)
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		owners, changed := g.ownersNext(n)
		ok, why := leaveDone(ids, quotas, before, owners)
		if ok {
			return owners
		}
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("partitions not owned as placed within %v: %s", limit, why)
		}
	}
}

func leaveDone(ids []string, quotas []int, before, owners []string) (bool, string) {
	for p, id := range owners {
		if _, stays := slices.BinarySearch(ids, before[p]); stays && id != before[p] {
			return false, fmt.Sprintf("partition %d moved from %s, still a member, to %s", p, before[p], id)
		}
	}
	if why := atQuota(ids, quotas, owners); why != "" {
		return false, why
	}
	return true, ""
}

// atQuota returns "" when every partition is owned by one of ids (sorted)
// and each holds its quota, else what is off.
func atQuota(ids []string, quotas []int, owners []string) string {
	load := make([]int, len(ids))
	for p, id := range owners {
		i, member := slices.BinarySearch(ids, id)
		if !member {
			return fmt.Sprintf("partition %d owned by %q", p, id)
		}
		load[i]++
	}
	if !slices.Equal(load, quotas) {
		return fmt.Sprintf("loads %v; want the quotas %v", load, quotas)
	}
	return ""
}

func diff(a, b []string) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// partLogger discards the members' logs unless ELECTOR_PART_LOG is set.
func partLogger(id string) *slog.Logger {
	if os.Getenv("ELECTOR_PART_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("member", id)
}
