// Package prioritytest checks preferred leaders (elector.Options.Priority)
// end to end on a real driver: each driver's tests call [Run] with a maker
// of Backends on one store, as separate processes would have.
package prioritytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/wait"
)

// Maker returns a new Backend on the store under test; the caller closes it.
type Maker func(t testing.TB) backend.Backend

// Run runs the preferred-leader subtests with leases of the given TTL.
// The subtests run in parallel: each has an election of its own and
// injects no fault, and each spends its time waiting on the TTL.
func Run(t *testing.T, ttl time.Duration, mk Maker) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, time.Duration, Maker)
	}{
		{"PreferredElectedNext", testPreferredElectedNext},
		{"EqualNeverPreempt", testEqualNeverPreempt},
		{"StuckPreferredBounded", testStuckPreferredBounded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, ttl, mk)
		})
	}
}

// history records the terms of several electors of one election and fails
// the test if two OnElected ever run at once.
type history struct {
	t      *testing.T
	mu     sync.Mutex
	active string // the identity whose OnElected runs, or ""
	events chan event
	log    *slog.Logger // the electors' debug logs, printed if the test fails
}

// event is a term starting ("elected") or ending ("revoked").
type event struct {
	kind, who string
	reason    error
	at        time.Time
}

func newHistory(t *testing.T) *history {
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	// Registered first, so it runs after the electors' cleanups stopped them.
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("the electors' logs:\n%s", buf.String())
		}
	})
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return &history{t: t, events: make(chan event, 256), log: log}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// options returns the Options of a candidate recorded in h.
func (h *history) options(who string, priority int, ttl time.Duration) *elector.Options {
	return &elector.Options{
		Identity: who,
		Priority: priority,
		TTL:      ttl,
		Logger:   h.log.With("who", who),
		OnElected: func(ctx context.Context, _ elector.Term) {
			h.mu.Lock()
			if h.active != "" {
				h.t.Errorf("%s elected while %s still acts: got two leaders, want one: exclusion", who, h.active)
			}
			h.active = who
			h.mu.Unlock()
			h.events <- event{kind: "elected", who: who, at: time.Now()}
			<-ctx.Done()
			h.mu.Lock()
			if h.active == who {
				h.active = ""
			}
			h.mu.Unlock()
		},
		OnRevoked: func(_ elector.Term, reason error) {
			h.events <- event{kind: "revoked", who: who, reason: reason, at: time.Now()}
		},
	}
}

// next returns the next event, failing the test if none comes within d.
func (h *history) next(d time.Duration) event {
	h.t.Helper()
	select {
	case ev := <-h.events:
		return ev
	case <-time.After(d):
		h.t.Fatalf("no term started or ended within %v", d)
	}
	return event{}
}

// quiet fails the test if a term starts or ends within d.
func (h *history) quiet(d time.Duration, rule string) {
	h.t.Helper()
	select {
	case ev := <-h.events:
		h.t.Fatalf("got %s %s (%v) within %v, want no change: %s", ev.who, ev.kind, ev.reason, d, rule)
	case <-time.After(d):
	}
}

// start runs an elector of election on a new Backend until the test ends.
func start(t *testing.T, mk Maker, election string, o *elector.Options) {
	t.Helper()
	b := mk(t)
	e, err := elector.New(b, election, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run of %s: got %v, want context.Canceled", o.Identity, err)
		}
		_ = b.Close()
	})
}

func name(test string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "prioritytest/" + test + "-" + hex.EncodeToString(b[:])
}

// testPreferredElectedNext: the leader yields to a higher candidate, and a
// candidate that queued earlier stands aside, so the higher is elected
// next; then it keeps the election.
func testPreferredElectedNext(t *testing.T, ttl time.Duration, mk Maker) {
	h, election := newHistory(t), name("next")
	start(t, mk, election, h.options("alice", 1, ttl))
	if ev := h.next(10 * ttl); ev.kind != "elected" || ev.who != "alice" {
		t.Fatalf("got %s %s, want alice elected", ev.who, ev.kind)
	}
	start(t, mk, election, h.options("carol", 1, ttl))
	h.quiet(ttl, "carol, of alice's priority, waits")
	start(t, mk, election, h.options("bob", 3, ttl))
	// Alice's OnRevoked and bob's OnElected, in either order: the lease is
	// released once alice's OnElected has returned, before her OnRevoked.
	var yielded, elected time.Time
	for range 2 {
		switch ev := h.next(10 * ttl); {
		case ev.kind == "revoked" && ev.who == "alice" && errors.Is(ev.reason, elector.ErrPreempted) && yielded.IsZero():
			yielded = ev.at
		case ev.kind == "elected" && ev.who == "bob" && elected.IsZero():
			elected = ev.at
		default:
			t.Fatalf("got %s %s (%v), want alice revoked with ErrPreempted and bob elected: the highest live candidate is elected next", ev.who, ev.kind, ev.reason)
		}
	}
	if d := elected.Sub(yielded); d > ttl/2 {
		t.Errorf("bob elected %v after alice's OnRevoked, want within TTL/2 = %v: a hand-over does not wait for an expiry", d, ttl/2)
	}
	h.quiet(2*ttl, "bob keeps the election; the others stand aside")
}

// testEqualNeverPreempt: a candidate of the leader's priority never
// preempts it.
func testEqualNeverPreempt(t *testing.T, ttl time.Duration, mk Maker) {
	h, election := newHistory(t), name("equal")
	start(t, mk, election, h.options("alice", 2, ttl))
	if ev := h.next(10 * ttl); ev.kind != "elected" || ev.who != "alice" {
		t.Fatalf("got %s %s, want alice elected", ev.who, ev.kind)
	}
	start(t, mk, election, h.options("bob", 2, ttl))
	h.quiet(3*ttl, "equal priorities never preempt")
}

// register registers c, trying again for up to d while the store does not
// answer (a loaded machine): the entry is the test's set-up, not what it
// tests.
func register(t *testing.T, ctx context.Context, r backend.Registry, c backend.Candidate, d time.Duration) backend.Registration {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		reg, err := r.Register(ctx, c, false)
		switch {
		case err == nil:
			return reg
		case errors.Is(err, backend.ErrInvalid) || time.Now().After(deadline):
			t.Fatalf("register %s: %v", c.Identity, err)
		}
		t.Logf("register %s: %v; trying again", c.Identity, err)
		if !wait.Sleep(ctx, c.TTL/3) {
			t.Fatalf("register %s: %v", c.Identity, ctx.Err())
		}
	}
}

// testStuckPreferredBounded: a higher candidate whose entry stays live but
// that never campaigns costs one yield and at most about a TTL without a
// leader, and is not yielded to again.
func testStuckPreferredBounded(t *testing.T, ttl time.Duration, mk Maker) {
	h, election := newHistory(t), name("stuck")
	start(t, mk, election, h.options("alice", 1, ttl))
	if ev := h.next(10 * ttl); ev.kind != "elected" || ev.who != "alice" {
		t.Fatalf("got %s %s, want alice elected", ev.who, ev.kind)
	}
	start(t, mk, election, h.options("carol", 1, ttl))

	b := mk(t)
	defer b.Close()
	r, ok := b.(backend.Registry)
	if !ok {
		t.Fatalf("%T is not a backend.Registry", b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	reg := register(t, ctx, r, backend.Candidate{Election: election, Identity: "stuck", TTL: ttl, Priority: 9}, 10*ttl)
	h.log.Info("registered", "who", "stuck", "id", reg.ID())
	wg.Go(func() { // its process keeps the entry alive, but never campaigns
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			_ = reg.Refresh(ctx)
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	})

	ev := h.next(10 * ttl)
	if ev.kind != "revoked" || ev.who != "alice" || !errors.Is(ev.reason, elector.ErrPreempted) {
		t.Fatalf("got %s %s (%v), want alice revoked with ErrPreempted", ev.who, ev.kind, ev.reason)
	}
	yielded := ev.at
	bound := ttl + max(ttl, 2*time.Second) // the bound, and slack for a loaded machine
	ev = h.next(2 * bound)
	if ev.kind != "elected" {
		t.Fatalf("got %s %s, want alice or carol elected", ev.who, ev.kind)
	}
	if d := ev.at.Sub(yielded); d > bound {
		t.Errorf("%s elected %v after the yield, want within %v: a stuck preferred candidate is deferred to for about a TTL", ev.who, d, bound)
	}
	h.quiet(3*ttl, "no second yield to a candidate that did not win")
}

// Bench measures, b.N times, the time from a preferred candidate's Run to
// its OnElected while a lower one leads (with MinTerm 0; the preferred
// candidate's Backend is made, and its client connected, beforehand), and
// reports its p50 and p99.
func Bench(b *testing.B, ttl time.Duration, mk Maker) {
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		took = append(took, preemptOnce(b, ttl, mk))
	}
	Report(b, took)
}

// Report reports the p50 and p99 of took, in ms, as Bench does, and no
// ns/op: the metrics a peer's preemption benchmark reports beside it.
func Report(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	q := func(f float64) float64 {
		return float64(took[min(len(took)-1, int(f*float64(len(took))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// preemptOnce starts a lower candidate, waits for it to lead, then starts
// a higher one and returns how long it took to be elected.
func preemptOnce(b *testing.B, ttl time.Duration, mk Maker) time.Duration {
	election := name("bench")
	elected := make(chan time.Time, 2)
	opts := func(who string, p int) *elector.Options {
		return &elector.Options{
			Identity: who, Priority: p, TTL: ttl, Logger: slog.New(slog.DiscardHandler),
			OnElected: func(ctx context.Context, _ elector.Term) {
				elected <- time.Now()
				<-ctx.Done()
			},
		}
	}
	var stops []func()
	defer func() {
		for _, stop := range slices.Backward(stops) {
			stop()
		}
	}()
	// prepare makes a candidate's Backend and Elector (a client connects
	// outside the time measured) and returns the function that runs it.
	prepare := func(who string, p int) func() {
		be := mk(b)
		e, err := elector.New(be, election, opts(who, p))
		if err != nil {
			b.Fatal(err)
		}
		return func() {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = e.Run(ctx) }()
			stops = append(stops, func() { cancel(); <-done; _ = be.Close() })
		}
	}
	prepare("low", 1)()
	select {
	case <-elected:
	case <-time.After(10 * ttl):
		b.Fatal("the lower candidate was not elected")
	}
	high := prepare("high", 2)
	start := time.Now()
	high()
	select {
	case at := <-elected:
		return at.Sub(start)
	case <-time.After(10 * ttl):
		b.Fatal("the preferred candidate was not elected")
	}
	return 0
}
