package partition

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// ledger records every member's callbacks and checks the invariants as they
// happen: at most one OnAssigned running per partition, tokens strictly
// increasing per partition, OnRevoked exactly once per OnAssigned and only
// after it returned.
type ledger struct {
	t  testing.TB
	mu sync.Mutex

	active   map[int]string // partition -> member whose OnAssigned runs
	last     map[int]uint64 // highest token seen per partition
	returned map[string]bool
	revoked  map[string]bool
	log      []string // ordered record: "assigned b 3 t7", "returned a 3 t6", "revoked a 3 t6 <reason>"
	changes  int      // assignments so far
}

func newLedger(t testing.TB) *ledger {
	return &ledger{t: t, active: map[int]string{}, last: map[int]uint64{}, returned: map[string]bool{}, revoked: map[string]bool{}}
}

func key(id string, a Assignment) string { return fmt.Sprintf("%s %d t%d", id, a.Partition, a.Token) }

// options returns Options for member id that record into g. OnAssigned
// holds the partition until its ctx is done.
func (g *ledger) options(id string) *Options {
	return &Options{
		Identity: id,
		Logger:   slog.New(slog.DiscardHandler),
		OnAssigned: func(ctx context.Context, a Assignment) {
			g.assigned(id, a)
			<-ctx.Done()
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.active[a.Partition] == id {
				delete(g.active, a.Partition)
			}
			g.returned[key(id, a)] = true
			g.log = append(g.log, "returned "+key(id, a))
		},
		OnRevoked: func(a Assignment, reason error) {
			g.mu.Lock()
			defer g.mu.Unlock()
			k := key(id, a)
			if !g.returned[k] {
				g.t.Errorf("OnRevoked(%s) before its OnAssigned returned", k)
			}
			if g.revoked[k] {
				g.t.Errorf("OnRevoked(%s) twice", k)
			}
			g.revoked[k] = true
			g.log = append(g.log, fmt.Sprintf("revoked %s %v", k, reason))
		},
	}
}

func (g *ledger) assigned(id string, a Assignment) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if other, ok := g.active[a.Partition]; ok {
		g.t.Errorf("partition %d assigned to %s (token %d) while %s still owns it: two owners at once", a.Partition, id, a.Token, other)
	}
	if a.Token <= g.last[a.Partition] {
		g.t.Errorf("partition %d assigned to %s with token %d; want > %d: tokens strictly increase", a.Partition, id, a.Token, g.last[a.Partition])
	}
	g.last[a.Partition] = a.Token
	g.active[a.Partition] = id
	g.changes++
	g.log = append(g.log, "assigned "+key(id, a))
}

// count returns the number of assignments so far.
func (g *ledger) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changes
}

// owners returns the member running OnAssigned for each partition of n, ""
// for none.
func (g *ledger) owners(n int) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, n)
	for p, id := range g.active {
		out[p] = id
	}
	return out
}

// checkRevoked fails for every OnAssigned without its OnRevoked.
func (g *ledger) checkRevoked() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.returned {
		if !g.revoked[k] {
			g.t.Errorf("OnAssigned(%s) returned but OnRevoked was never called", k)
		}
	}
	if len(g.active) != 0 {
		g.t.Errorf("partitions still owned after every Run returned: %v", g.active)
	}
}

// member is one running Assigner.
type member struct {
	id     string
	a      *Assigner
	b      backend.Backend
	cancel context.CancelFunc
	done   chan error
}

func start(t testing.TB, b backend.Backend, group string, n int, opts *Options) *member {
	t.Helper()
	a, err := New(b, group, n, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{id: opts.Identity, a: a, b: b, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- a.Run(ctx) }()
	return m
}

// startBalanced starts count members of group (n partitions) on peers of
// store, named prefix0, prefix1, ..., and waits until the partitions are
// owned at quota.
func startBalanced(t testing.TB, g *ledger, store *memory.Backend, group string, n, count int, prefix string) []*member {
	t.Helper()
	var ms []*member
	for i := range count {
		ms = append(ms, start(t, store.Peer(), group, n, g.options(fmt.Sprintf("%s%d", prefix, i))))
	}
	until(t, time.Minute, func() bool { return balanced(g, group, n, ids(ms)) })
	return ms
}

// stop stops m gracefully and checks Run's result.
func (m *member) stop(t testing.TB) {
	t.Helper()
	m.cancel()
	if err := <-m.done; err != context.Canceled {
		t.Errorf("%s: Run returned %v; want context.Canceled", m.id, err)
	}
}

// until advances (virtual) time in steps of 10 ms until cond holds, and
// returns how long that took; it fails the test after limit.
func until(t testing.TB, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > limit {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(began)
}

// placedOwners returns, for each partition, the member the placement puts
// it on given its current owners (nil: none).
func placedOwners(group string, n int, ids []string, current []string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	out := make([]string, n)
	for p, i := range Place(group, n, ids, current) {
		out[p] = ids[i]
	}
	return out
}

// balanced reports whether every partition of n is owned by one of ids,
// each holding its quota.
func balanced(g *ledger, group string, n int, ids []string) bool {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	load := make([]int, len(ids))
	for _, id := range g.owners(n) {
		i, ok := slices.BinarySearch(ids, id)
		if !ok {
			return false
		}
		load[i]++
	}
	return slices.Equal(load, Quotas(group, n, ids))
}

// leftOnlyOwn reports whether, after members left, every partition is owned
// by one of ids, each holding its quota, and every partition that one of
// ids owned before (before: the owners then) is still its: only the
// leavers' partitions moved. Which survivor takes which of the leavers'
// partitions may differ from one placement: a reading in the middle of the
// hand-overs can place them on another, equally balanced, set.
func leftOnlyOwn(g *ledger, group string, n int, ids []string, before []string) bool {
	if !balanced(g, group, n, ids) {
		return false
	}
	now := g.owners(n)
	for p, id := range before {
		if slices.Contains(ids, id) && now[p] != id {
			return false
		}
	}
	return true
}

func ids(ms []*member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.id)
	}
	return out
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startLoop runs a's member loop as settled, with owners as its belief of
// who owns what and members as its first member list, until the returned
// cancel; views takes later member lists, and done gets run's error.
func startLoop(a *Assigner, owners, members []string) (views chan view, cancel context.CancelFunc, done chan error) {
	l := newLoop(a)
	l.settled, l.plan.probed = true, true
	l.plan.owners = owners
	views = make(chan view, 1)
	views <- view{members: members, joined: true, complete: true}
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- l.run(ctx, views, nil, func() {}) }()
	return views, cancel, done
}
