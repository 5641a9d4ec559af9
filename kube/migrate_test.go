package kube

// Rolling migrations between Leases and the other stores, through package
// migrate, on the real servers: two replicas restarted one at a time from
// the old store (unmodified electors) through PhaseBoth, PhaseNew and
// PhaseDone, leaders resigning every 300 ms, a late unmodified replica and
// a late PhaseOld replica started once the marker is written, then
// migrate.Cleanup of the old store.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/etcd"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/migrate"
	"github.com/leaderkit/elector/redlock"
)

var _ migrate.Marker = (*Backend)(nil)

// migrateTTL is the TTL of the migration tests: etcd grants whole seconds,
// and the Leases run with Options.ElectorOnly (no client-go candidate).
const migrateTTL = 2 * time.Second

// side makes the backends of one store for one replica; each is closed by
// the replica that uses it.
type side func(tb testing.TB) backend.Backend

func kubeSide(tb testing.TB) side {
	s := testServer(tb)
	return func(tb testing.TB) backend.Backend {
		b, err := New(s.client(tb), s.ns, &Options{ElectorOnly: true})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
}

func etcdSide(tb testing.TB) side {
	cli, err := clientv3.New(clientv3.Config{Endpoints: testenv.EtcdEndpoints(tb), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return func(tb testing.TB) backend.Backend {
		b, err := etcd.New(cli, nil)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
}

func redisSide(tb testing.TB) side {
	var clients []redis.UniversalClient
	for _, a := range testenv.RedisAddrs(tb) {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true})
		tb.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	return func(tb testing.TB) backend.Backend {
		// More than the default per-node timeout: the test machine may be loaded.
		b, err := redlock.New(clients, &redlock.Options{RequestTimeout: time.Second})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
}

func TestMigrateLeaseToEtcd(t *testing.T) {
	runMigration(t, kubeSide(t), etcdSide(t), "etcd")
}

func TestMigrateRedisToLease(t *testing.T) {
	runMigration(t, redisSide(t), kubeSide(t), "kube")
}

// runMigration rolls a migration from old to newSide and checks the
// history (one leader at a time, tokens rising across the switch), the late
// replicas, the marker as the old store reports it, and the cleanup.
func runMigration(t *testing.T, old, newSide side, newName string) {
	m := &migration{tb: t, election: testName(t), old: old, new: newSide, newName: newName, fence: &fenceLog{tb: t, started: make(chan struct{})}}
	lateErr := m.roll()
	m.checkTerms()
	if !errors.Is(lateErr, backend.ErrInvalid) || !strings.Contains(lateErr.Error(), "step 3") {
		t.Errorf("late PhaseOld replica: got Run error %v; want ErrInvalid naming runbook step 3", lateErr)
	}

	ob := old(t)
	defer ob.Close()
	ctx := testCtx(t)
	if h, err := ob.Leader(ctx, m.election); err != nil || h.Identity != migrate.MarkerPrefix+newName {
		t.Errorf("old store's holder after the migration: got %+v, %v; want the marker", h, err)
	}
	marker, ok := ob.(migrate.Marker)
	if !ok {
		t.Fatalf("old backend %T implements no migrate.Marker", ob)
	}
	if _, err := migrate.Cleanup(ctx, marker, m.election); err != nil {
		t.Fatal(err)
	}
	if h, err := ob.Leader(ctx, m.election); !errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("old store's holder after Cleanup: got %+v, %v; want none", h, err)
	}
	if _, err := migrate.Cleanup(ctx, marker, m.election); !errors.Is(err, migrate.ErrNotMarked) {
		t.Errorf("second Cleanup: got %v; want ErrNotMarked", err)
	}
}

// fenceLog is the protected resource of a migration test: it records terms
// one at a time and refuses a token at or below the highest it has seen.
type fenceLog struct {
	tb      testing.TB
	mu      sync.Mutex
	active  string
	highest uint64
	terms   []elector.Term
	started chan struct{} // closed and replaced when a term starts
}

// nextTerm returns a channel closed when the next term starts.
func (f *fenceLog) nextTerm() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started
}

func (f *fenceLog) start(t elector.Term) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active != "" {
		f.tb.Errorf("term %v started while %s leads: got two leaders, want one", t, f.active)
	}
	if t.Token <= f.highest {
		f.tb.Errorf("term %v: token %#x not above the fence's %#x", t, t.Token, f.highest)
	}
	f.active, f.highest = t.Identity, max(f.highest, t.Token)
	f.terms = append(f.terms, t)
	close(f.started)
	f.started = make(chan struct{})
}

func (f *fenceLog) end(t elector.Term) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == t.Identity {
		f.active = ""
	}
}

// migration runs replicas of one election on an old and a new store.
type migration struct {
	tb       testing.TB
	election string
	old, new side
	newName  string
	fence    *fenceLog
}

// mreplica is one replica process: an elector over its own backends.
type mreplica struct {
	id     string
	e      *elector.Elector
	cancel context.CancelFunc
	done   chan error
	closes []func() error
}

// start runs replica id in phase; phase 0 is an unmodified replica on the
// old backend alone.
func (m *migration) start(id string, phase migrate.Phase) *mreplica {
	r := &mreplica{id: id, done: make(chan error, 1)}
	ob := m.old(m.tb)
	var b backend.Backend = ob
	r.closes = []func() error{ob.Close}
	if phase != 0 {
		nb := m.new(m.tb)
		mb, err := migrate.New(ob, nb, phase, &migrate.Options{NewName: m.newName})
		if err != nil {
			m.tb.Fatal(err)
		}
		b, r.closes = mb, []func() error{mb.Close, ob.Close, nb.Close}
	}
	e, err := elector.New(b, m.election, &elector.Options{
		Identity: id,
		TTL:      migrateTTL,
		Logger:   slog.New(slog.DiscardHandler),
		OnElected: func(ctx context.Context, t elector.Term) {
			m.fence.start(t)
			defer m.fence.end(t)
			timer := time.NewTimer(300 * time.Millisecond)
			defer timer.Stop()
			select {
			case <-ctx.Done():
			case <-timer.C:
				_ = r.e.Resign(ctx)
			}
		},
	})
	if err != nil {
		m.tb.Fatal(err)
	}
	r.e = e
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- e.Run(ctx) }()
	return r
}

// stop ends r's Run (releasing its lease) and closes its backends. It
// returns Run's error unless that is the cancellation.
func (r *mreplica) stop() error {
	r.cancel()
	err := <-r.done
	for _, c := range r.closes {
		_ = c()
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// awaitTerm waits until a term starts after next was taken.
func (m *migration) awaitTerm(next <-chan struct{}) {
	select {
	case <-next:
	case <-time.After(30 * migrateTTL):
		m.tb.Fatal("no term started within 30 TTLs")
	}
}

// roll runs the runbook with two replicas, restarted one at a time into
// each phase, each restart once a term has started since the previous one;
// a late unmodified replica and a late PhaseOld replica start once the
// first PhaseNew replica runs and the old store reports the marker. It
// returns the late PhaseOld replica's Run error.
func (m *migration) roll() (lateErr error) {
	rs := make([]*mreplica, 2)
	next := m.fence.nextTerm()
	for i := range rs {
		rs[i] = m.start(fmt.Sprintf("r%d-step1", i), 0)
	}
	m.awaitTerm(next)
	var late, lateOld *mreplica
	for _, phase := range []migrate.Phase{migrate.PhaseBoth, migrate.PhaseNew, migrate.PhaseDone} {
		for i := range rs {
			if err := rs[i].stop(); err != nil {
				m.tb.Errorf("replica %s: Run: %v", rs[i].id, err)
			}
			next := m.fence.nextTerm()
			rs[i] = m.start(fmt.Sprintf("r%d-%v", i, phase), phase)
			if phase == migrate.PhaseNew && i == 0 {
				m.waitMarked() // runbook step 3: the marker before going on
				late = m.start("late-unmodified", 0)
				lateOld = m.start("late-phase-old", migrate.PhaseOld)
			}
			m.awaitTerm(next)
		}
	}
	// Two more terms: the late replicas had every chance to lead.
	m.awaitTerm(m.fence.nextTerm())
	m.awaitTerm(m.fence.nextTerm())
	if late.e.IsLeader() {
		m.tb.Error("the late unmodified replica leads; want it blocked behind the marker")
	}
	select {
	case lateErr = <-lateOld.done:
		lateOld.done <- lateErr
	case <-time.After(10 * migrateTTL):
		m.tb.Error("the late PhaseOld replica still runs; want its Run refused")
	}
	for _, r := range append(rs, late, lateOld) {
		if err := r.stop(); err != nil && r != lateOld {
			m.tb.Errorf("replica %s: Run: %v", r.id, err)
		}
	}
	return lateErr
}

// waitMarked waits until the old store reports the marker as the holder,
// watching it through a backend of its own.
func (m *migration) waitMarked() {
	ob := m.old(m.tb)
	defer ob.Close()
	w, ok := ob.(backend.Watcher)
	if !ok {
		m.tb.Fatalf("old backend %T is not a Watcher", ob)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*migrateTTL)
	defer cancel()
	err := w.Watch(ctx, m.election, func(h backend.Holder) {
		if migrate.IsMarker(h) {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		m.tb.Fatalf("waiting for the marker on the old store: %v", err)
	}
}

// checkTerms checks both epochs ran and the late replicas never led.
func (m *migration) checkTerms() {
	var n [2]int
	for _, t := range m.fence.terms {
		ep, _ := migrate.SplitToken(t.Token)
		if ep > 1 || strings.HasPrefix(t.Identity, "late-") {
			m.tb.Errorf("term %v (epoch %d): want epoch 0 or 1 and no late replica", t, ep)
			continue
		}
		n[ep]++
	}
	if n[0] < 2 || n[1] < 2 {
		m.tb.Errorf("got %d terms on the old side and %d on the new; want at least 2 of each", n[0], n[1])
	}
	m.tb.Logf("%d terms: %d on the old side (epoch 0), %d on the new (epoch 1)", len(m.fence.terms), n[0], n[1])
}
