package elector

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/internal/term"
)

const ttl = 3 * time.Second // renew every 1s, step down 600ms before the deadline

// event is one callback as a recorder saw it.
type event struct {
	kind   string // "elected" or "revoked"
	term   Term
	reason error
	at     time.Time
}

// recorder collects an elector's callbacks.
type recorder struct {
	mu     sync.Mutex
	events []event
	ch     chan event // every event, for waiting
	// hold, if set, runs as OnElected's body; by default OnElected waits
	// for its ctx.
	hold func(ctx context.Context, t Term)
}

func newRecorder() *recorder { return &recorder{ch: make(chan event, 100)} }

func (r *recorder) add(ev event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	r.ch <- ev
}

func (r *recorder) options(id string) *Options {
	return &Options{
		Identity: id,
		TTL:      ttl,
		Logger:   slog.New(slog.DiscardHandler),
		OnElected: func(ctx context.Context, t Term) {
			r.add(event{kind: "elected", term: t, at: time.Now()})
			if r.hold != nil {
				r.hold(ctx, t)
				return
			}
			<-ctx.Done()
		},
		OnRevoked: func(t Term, reason error) {
			r.add(event{kind: "revoked", term: t, reason: reason, at: time.Now()})
		},
	}
}

// next returns the next event, failing if none comes within a minute of
// (fake) time.
func (r *recorder) next(t *testing.T, kind string) event {
	t.Helper()
	select {
	case ev := <-r.ch:
		require.Equal(t, kind, ev.kind, "next callback: got %s, want %s", ev.kind, kind)
		return ev
	case <-time.After(time.Minute):
		t.Fatalf("no %s callback within a minute", kind)
	}
	return event{}
}

// none asserts that no callback has happened so far.
func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-r.ch:
		t.Fatalf("unexpected %s callback for %v", ev.kind, ev.term)
	default:
	}
}

// running is a started Run.
type running struct {
	e      *Elector
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, b backend.Backend, opts *Options) *running {
	t.Helper()
	e, err := New(b, "jobs", opts)
	require.NoError(t, err)
	return run(t, e)
}

func run(t *testing.T, e *Elector) *running {
	ctx, cancel := context.WithCancel(t.Context())
	r := &running{e: e, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- e.Run(ctx) }()
	return r
}

// stop cancels Run and returns its error.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its ctx ending")
	}
	return nil
}

func TestElectedThenCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		rec := newRecorder()
		var onElectedReturned time.Time
		rec.hold = func(ctx context.Context, _ Term) {
			<-ctx.Done()
			onElectedReturned = time.Now()
		}
		r := start(t, b, rec.options("alice"))
		el := rec.next(t, "elected")
		assert.Equal(t, Term{Election: "jobs", Identity: "alice", Token: 1, Start: el.at}, el.term)
		assert.True(t, r.e.IsLeader())
		term, ok := r.e.Term()
		assert.True(t, ok)
		assert.Equal(t, el.term, term)
		h, err := r.e.Leader(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "alice", h.Identity)

		time.Sleep(time.Second) // fake time: the term goes on
		err = r.stop(t)
		assert.Same(t, context.Canceled, err, "Run returns ctx.Err() unwrapped")
		rv := rec.next(t, "revoked")
		assert.Equal(t, el.term, rv.term)
		assert.Same(t, context.Canceled, rv.reason)
		assert.False(t, rv.at.Before(onElectedReturned), "OnRevoked runs after OnElected returned")
		assert.False(t, r.e.IsLeader())
		_, err = b.Leader(t.Context(), "jobs")
		assert.ErrorIs(t, err, backend.ErrNoLeader, "Run releases the lease on the way out")
		rec.none(t)
	})
}

func TestRenewalsKeepLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		rec := newRecorder()
		r := start(t, b, rec.options("alice"))
		el := rec.next(t, "elected")
		rival := newRecorder()
		r2 := start(t, b.Peer(), rival.options("bob"))
		time.Sleep(20 * ttl)
		rec.none(t)
		rival.none(t)
		term, ok := r.e.Term()
		assert.True(t, ok)
		assert.Equal(t, el.term.Token, term.Token, "one unbroken lease keeps its token")
		assert.NoError(t, r.e.Check())
		require.Same(t, context.Canceled, r.stop(t))
		rec.next(t, "revoked")
		rival.next(t, "elected")
		require.Same(t, context.Canceled, r2.stop(t))
	})
}

func TestIsolatedLeaderStepsDownBeforeExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		rec := newRecorder()
		var stopped time.Time
		rec.hold = func(ctx context.Context, _ Term) {
			<-ctx.Done()
			stopped = time.Now()
		}
		r := start(t, b, rec.options("alice"))
		el := rec.next(t, "elected")
		rival := newRecorder()
		r2 := start(t, b.Peer(), rival.options("bob"))
		time.Sleep(ttl / 2) // one renewal at ttl/3
		lastRenewal := el.at.Add(ttl / 3)
		b.Isolate()
		rv := rec.next(t, "revoked")
		assert.ErrorIs(t, rv.reason, ErrLeaseLost)
		assert.ErrorIs(t, rv.reason, term.ErrNoRenewal)
		stepDown := lastRenewal.Add(ttl - ttl/5)
		assert.Equal(t, stepDown, stopped, "the leader stops at deadline - SafetyMargin, not later")
		el2 := rival.next(t, "elected")
		assert.Equal(t, lastRenewal.Add(ttl), el2.at, "the rival wins when the lease expires at the store")
		assert.Greater(t, el2.term.Token, el.term.Token)
		assert.True(t, stopped.Before(el2.at), "the old leader stopped before the new one started")
		b.Heal()
		require.Same(t, context.Canceled, r.stop(t))
		require.Same(t, context.Canceled, r2.stop(t))
	})
}

func TestRenewFailureWithinDeadlineIsRidden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		rec := newRecorder()
		r := start(t, b, rec.options("alice"))
		rec.next(t, "elected")
		time.Sleep(ttl/3 - time.Millisecond)
		b.Isolate() // the renewal at ttl/3 fails …
		time.Sleep(ttl / 3)
		b.Heal() // … and a retry succeeds before the step-down point
		time.Sleep(5 * ttl)
		rec.none(t)
		assert.True(t, r.e.IsLeader())
		require.Same(t, context.Canceled, r.stop(t))
	})
}

func TestLostLeaseEndsTermAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		rec := newRecorder()
		r := start(t, b, rec.options("alice"))
		el := rec.next(t, "elected")
		time.Sleep(ttl / 2)
		expired := time.Now()
		require.True(t, b.Expire("jobs"))
		rv := rec.next(t, "revoked")
		assert.Equal(t, expired, rv.at, "Lost() ends the term without delay")
		assert.ErrorIs(t, rv.reason, ErrLeaseLost)
		assert.ErrorIs(t, rv.reason, backend.ErrLost)
		el2 := rec.next(t, "elected")
		assert.Greater(t, el2.term.Token, el.term.Token, "Run campaigns again after a lost lease")
		require.Same(t, context.Canceled, r.stop(t))
	})
}

func TestCrashFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := store.Peer(), store.Peer()
		recA, recB := newRecorder(), newRecorder()
		ra := start(t, a, recA.options("alice"))
		elA := recA.next(t, "elected")
		rb := start(t, b, recB.options("bob"))
		time.Sleep(ttl / 2) // alice renewed at ttl/3
		a.Crash()
		elB := recB.next(t, "elected")
		assert.Equal(t, elA.at.Add(ttl/3+ttl), elB.at, "the successor is elected TTL after the last renewal")
		rv := recA.next(t, "revoked")
		assert.ErrorIs(t, rv.reason, ErrLeaseLost)
		assert.True(t, rv.at.Before(elB.at), "the crashed-off leader stopped before the successor started")
		err := <-ra.done
		assert.ErrorIs(t, err, backend.ErrClosed, "a closed backend is a permanent error")
		require.Same(t, context.Canceled, rb.stop(t))
	})
}

func TestResignHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		recA, recB := newRecorder(), newRecorder()
		ra := start(t, store, recA.options("alice"))
		elA := recA.next(t, "elected")
		rb := start(t, store.Peer(), recB.options("bob"))
		time.Sleep(ttl)
		require.NoError(t, ra.e.Resign(t.Context()))
		assert.False(t, ra.e.IsLeader())
		rv := recA.next(t, "revoked")
		assert.ErrorIs(t, rv.reason, ErrResigned)
		elB := recB.next(t, "elected")
		assert.Equal(t, rv.at, elB.at, "the waiting candidate is elected at once")
		assert.Greater(t, elB.term.Token, elA.term.Token)
		assert.ErrorIs(t, ra.e.Resign(t.Context()), ErrNotLeader)
		// alice queues again behind bob and wins when bob resigns.
		time.Sleep(ttl)
		recA.none(t)
		require.NoError(t, rb.e.Resign(t.Context()))
		elA2 := recA.next(t, "elected")
		assert.Greater(t, elA2.term.Token, elB.term.Token)
		require.Same(t, context.Canceled, ra.stop(t))
		require.Same(t, context.Canceled, rb.stop(t))
	})
}

func TestResignAloneCampaignsAgainAfterRenewInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		r := start(t, memory.New(), rec.options("alice"))
		rec.next(t, "elected")
		resigned := time.Now()
		require.NoError(t, r.e.Resign(t.Context()))
		rec.next(t, "revoked")
		el := rec.next(t, "elected")
		assert.Equal(t, resigned.Add(ttl/3), el.at, "with no other candidate, a resigned elector returns after RenewInterval")
		require.Same(t, context.Canceled, r.stop(t))
	})
}

func TestResignFromOnElected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		resigned := make(chan error, 1)
		var e *Elector
		rec.hold = func(ctx context.Context, _ Term) {
			resigned <- e.Resign(ctx) // must not wait for this callback to return
			<-ctx.Done()
		}
		e, err := New(memory.New(), "jobs", rec.options("alice"))
		require.NoError(t, err)
		r := run(t, e)
		rec.next(t, "elected")
		assert.NoError(t, <-resigned)
		rv := rec.next(t, "revoked")
		assert.ErrorIs(t, rv.reason, ErrResigned)
		require.Same(t, context.Canceled, r.stop(t))
	})
}

func TestVoluntaryEndKeepsLeaseUntilOnElectedReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		recA, recB := newRecorder(), newRecorder()
		var returned time.Time
		recA.hold = func(ctx context.Context, _ Term) {
			<-ctx.Done()
			<-time.After(3 * ttl) // slow shutdown, longer than the TTL
			returned = time.Now()
		}
		ra := start(t, store, recA.options("alice"))
		recA.next(t, "elected")
		rb := start(t, store.Peer(), recB.options("bob"))
		time.Sleep(ttl)
		ra.cancel()
		elB := recB.next(t, "elected")
		assert.False(t, elB.at.Before(returned), "no successor while OnElected still runs after a voluntary end")
		rv := recA.next(t, "revoked")
		assert.Same(t, context.Canceled, rv.reason)
		assert.Same(t, context.Canceled, <-ra.done)
		require.Same(t, context.Canceled, rb.stop(t))
	})
}

func TestTransientCampaignErrorsAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		b.Isolate()
		rec := newRecorder()
		r := start(t, b, rec.options("alice"))
		time.Sleep(10 * ttl)
		select {
		case err := <-r.done:
			t.Fatalf("Run returned %v on a transient error, want it to keep retrying", err)
		default:
		}
		rec.none(t)
		healed := time.Now()
		b.Heal()
		el := rec.next(t, "elected")
		assert.LessOrEqual(t, el.at.Sub(healed), ttl/3, "retries back off to at most RenewInterval")
		require.Same(t, context.Canceled, r.stop(t))
	})
}

func TestPermanentErrorEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		require.NoError(t, b.Close())
		e, err := New(b, "jobs", &Options{Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		err = e.Run(t.Context())
		assert.ErrorIs(t, err, backend.ErrClosed)
		assert.Contains(t, err.Error(), `campaign "jobs"`)
	})
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		r := start(t, memory.New(), rec.options("alice"))
		rec.next(t, "elected")
		assert.ErrorIs(t, r.e.Run(t.Context()), ErrRunning)
		require.Same(t, context.Canceled, r.stop(t))
		// Run may be called again once it has returned.
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.e.Run(ctx) }()
		rec.next(t, "revoked")
		rec.next(t, "elected")
		cancel()
		assert.Same(t, context.Canceled, <-done)
	})
}

// noWatch hides a backend's Watcher, so the elector polls.
type noWatch struct{ backend.Backend }

func TestOnLeaderChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*memory.Backend) backend.Backend
	}{
		{"watch", func(b *memory.Backend) backend.Backend { return b }},
		{"poll", func(b *memory.Backend) backend.Backend { return noWatch{b} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				var mu sync.Mutex
				var seen []string
				changes := make(chan struct{}, 100)
				opts := newRecorder().options("observer")
				opts.OnElected = nil // observes only: never campaigns long
				opts.OnLeaderChange = func(h backend.Holder) {
					mu.Lock()
					seen = append(seen, h.Identity)
					mu.Unlock()
					changes <- struct{}{}
				}
				obs, err := New(tc.wrap(store.Peer()), "jobs", opts)
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				// Observe "jobs" while campaigning for it behind alice.
				recA := newRecorder()
				ra := start(t, store, recA.options("alice"))
				recA.next(t, "elected")
				done := make(chan error, 1)
				go func() { done <- obs.Run(ctx) }()
				<-changes       // alice
				synctest.Wait() // the observer queues behind alice
				require.NoError(t, ra.e.Resign(t.Context()))
				// The observer itself, possibly after a report of no leader
				// between alice's release and its own win.
				for last := ""; last != "observer"; {
					<-changes
					mu.Lock()
					last = seen[len(seen)-1]
					mu.Unlock()
				}
				mu.Lock()
				if got := seen; !slices.Equal(got, []string{"alice", "observer"}) && !slices.Equal(got, []string{"alice", "", "observer"}) {
					t.Errorf("OnLeaderChange saw %q, want alice then observer (with no leader, \"\", between them or not)", got)
				}
				mu.Unlock()
				cancel()
				assert.Same(t, context.Canceled, <-done)
				require.Same(t, context.Canceled, ra.stop(t))
			})
		})
	}
}

func TestNewValidates(t *testing.T) {
	b := memory.New()
	for _, tc := range []struct {
		name     string
		b        backend.Backend
		election string
		opts     *Options
		want     string
	}{
		{"nil backend", nil, "jobs", nil, "backend is nil"},
		{"empty election", b, "", nil, "election name is empty"},
		{"bad election", b, "a//b", nil, "empty segment"},
		{"control char", b, "jobs\n", nil, "control or space character"},
		{"long election", b, strings.Repeat("x", 300), nil, "want at most 256"},
		{"short TTL", b, "jobs", &Options{TTL: time.Millisecond}, "Options.TTL is 1ms; want between 100ms and 1h0m0s"},
		{"century TTL", b, "jobs", &Options{TTL: 876000 * time.Hour}, "Options.TTL is 876000h0m0s; want between 100ms and 1h0m0s"},
		{"negative TTL", b, "jobs", &Options{TTL: -time.Second}, "Options.TTL"},
		{"renew too long", b, "jobs", &Options{TTL: 3 * time.Second, RenewInterval: 3 * time.Second}, "Options.RenewInterval 3s leaves no time to renew; want below TTL - SafetyMargin = 3s - 600ms = 2.4s"},
		{"negative renew", b, "jobs", &Options{RenewInterval: -1}, "Options.RenewInterval"},
		{"margin too large", b, "jobs", &Options{TTL: 10 * time.Second, SafetyMargin: 5 * time.Second}, "Options.SafetyMargin 5s is too large; want below TTL/2 = 5s"},
		{"negative margin", b, "jobs", &Options{SafetyMargin: -1}, "Options.SafetyMargin"},
		{"bad identity", b, "jobs", &Options{Identity: "a\x00b"}, "Options.Identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(tc.b, tc.election, tc.opts)
			assert.Nil(t, e)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "elector: "), "errors name the package: %q", err)
		})
	}
}

func TestNewDefaults(t *testing.T) {
	e, err := New(memory.New(), "jobs", nil)
	require.NoError(t, err)
	assert.Equal(t, DefaultTTL, e.opts.TTL)
	assert.Equal(t, DefaultTTL/3, e.opts.RenewInterval)
	assert.Equal(t, DefaultTTL/5, e.opts.SafetyMargin)
	assert.Same(t, slog.Default(), e.opts.Logger)
	assert.Regexp(t, `^.+-\d+-[0-9a-f]{6}$`, e.Identity())
	e2, err := New(memory.New(), "jobs", nil)
	require.NoError(t, err)
	assert.NotEqual(t, e.Identity(), e2.Identity(), "default identities differ")
}

func TestBackoff(t *testing.T) {
	for attempt := range 40 {
		d := term.Backoff(attempt, time.Second)
		assert.GreaterOrEqual(t, d, time.Millisecond)
		assert.LessOrEqual(t, d, min(time.Second, 25*time.Millisecond<<min(attempt, 10)))
	}
}

func TestObserverSeesEveryStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		var mu sync.Mutex
		var kinds []string
		var events []Event
		rec := newRecorder()
		opts := rec.options("alice")
		opts.Observer = func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			kinds = append(kinds, ev.Kind.String())
			events = append(events, ev)
		}
		b.Isolate()
		r := start(t, b, opts)
		time.Sleep(time.Millisecond / 2) // one failed campaign: retries wait at least 1ms
		b.Heal()
		el := rec.next(t, "elected")
		time.Sleep(ttl/3*2 + time.Millisecond) // two renewals
		require.Same(t, context.Canceled, r.stop(t))
		rec.next(t, "revoked")
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []string{"campaign", "campaign", "elected", "renew", "renew", "ended", "release", "revoked"}, kinds)
		assert.ErrorIs(t, events[0].Err, memory.ErrIsolated)
		for _, ev := range events {
			assert.Equal(t, "jobs", ev.Election)
		}
		for _, ev := range events[2:] {
			assert.Equal(t, el.term, ev.Term)
		}
		assert.NoError(t, events[3].Err)
		assert.Same(t, context.Canceled, events[5].Err)
		assert.Same(t, context.Canceled, events[7].Err)
		assert.Equal(t, "unknown", EventKind(0).String())
	})
}

// shortLeases makes a backend grant leases that end d after they are won,
// as a campaign that took most of the TTL would.
type shortLeases struct {
	backend.Backend
	d time.Duration
}

type shortLease struct {
	backend.Lease
	deadline time.Time
}

func (b shortLeases) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return shortLease{l, time.Now().Add(b.d)}, nil
}

func (l shortLease) Deadline() time.Time { return l.deadline }

func TestLeaseWonTooLateIsGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		rec := newRecorder()
		opts := rec.options("alice")
		campaigns := 0
		opts.Observer = func(ev Event) {
			if ev.Kind == EventCampaign && ev.Err == nil {
				campaigns++
			}
		}
		e, err := New(shortLeases{store, 500 * time.Millisecond}, "jobs", opts)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err = e.Run(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded, "a lease won too late is not an error that stops Run")
		rec.none(t)
		assert.Greater(t, campaigns, 3, "Run keeps campaigning after giving a late lease back")
		_, err = store.Leader(t.Context(), "jobs")
		assert.ErrorIs(t, err, backend.ErrNoLeader, "each lease won too late was given back")
	})
}
