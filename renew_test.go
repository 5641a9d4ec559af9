package elector

import (
	"bytes"
	"context"
	"log/slog"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// slowBackend is a memory Backend whose Renew returns late: the renewal
// takes effect when it starts, and its answer comes back after delay, as a
// request's reply does.
type slowBackend struct {
	backend.Backend
	delay time.Duration
}

func (b slowBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return slowLease{l, b.delay}, nil
}

type slowLease struct {
	backend.Lease
	delay time.Duration
}

func (l slowLease) Renew(ctx context.Context) error {
	err := l.Lease.Renew(ctx)
	time.Sleep(l.delay)
	return err
}

// Renewals are scheduled from the lease's Deadline (RenewInterval after the
// request that proved it), not from when the previous attempt returned, so
// a slow reply does not push every later renewal back: elections whose
// leases one request renews stay in step.
func TestRenewScheduleFollowsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const delay = 200 * time.Millisecond
		rec := newRecorder()
		opts := rec.options("alice")
		var mu sync.Mutex
		var starts []time.Time
		opts.Observer = func(ev Event) {
			if ev.Kind == EventRenew && ev.Err == nil {
				mu.Lock()
				starts = append(starts, time.Now().Add(-ev.Took))
				mu.Unlock()
			}
		}
		r := start(t, slowBackend{memory.New(), delay}, opts)
		el := rec.next(t, "elected")
		time.Sleep(4*ttl/3 + 2*delay) // fake time: four renewals have returned
		assert.ErrorIs(t, r.stop(t), context.Canceled)
		rec.next(t, "revoked")
		mu.Lock()
		defer mu.Unlock()
		require.GreaterOrEqual(t, len(starts), 4)
		for i, at := range starts[:4] {
			want := el.at.Add(time.Duration(i+1) * ttl / 3)
			assert.Equal(t, want, at, "renewal %d: got start %v after election, want %v (k × RenewInterval, whatever the reply's delay)",
				i+1, at.Sub(el.at), want.Sub(el.at))
		}
	})
}

// pingedBackend is a memory Backend whose driver keeps its leases alive
// between renewals, as a ZooKeeper session's pings do: every TTL/6 it
// renews the lease in the background, and the Deadline follows.
type pingedBackend struct{ backend.Backend }

func (b pingedBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	p := &pingedLease{Lease: l}
	go func() {
		for {
			select {
			case <-time.After(c.TTL / 6):
				_ = l.Renew(context.Background())
			case <-l.Lost():
				return
			}
		}
	}()
	return p, nil
}

type pingedLease struct {
	backend.Lease
	renews atomic.Int32 // Renew calls of the Elector
}

func (l *pingedLease) Renew(ctx context.Context) error {
	l.renews.Add(1)
	return l.Lease.Renew(ctx)
}

// A Deadline that the driver moves between renewals postpones the next
// renewal and the step-down point alike: the leader neither steps down at
// the Deadline it saw at its last renewal nor renews a lease proven since.
func TestDriverMovedDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		var lease *pingedLease
		b := pingedBackend{memory.New()}
		r := start(t, leaseSpy{b, &lease}, rec.options("alice"))
		rec.next(t, "elected")
		time.Sleep(10 * ttl) // fake time
		assert.True(t, r.e.IsLeader(), "still leading: the Deadline never came within the safety margin")
		rec.none(t)
		assert.Zero(t, lease.renews.Load(), "renewals of a lease whose Deadline stays fresh")
		assert.ErrorIs(t, r.stop(t), context.Canceled)
		rec.next(t, "revoked")
	})
}

// leaseSpy hands the lease of a pingedBackend's Campaign to the test.
type leaseSpy struct {
	pingedBackend
	l **pingedLease
}

func (s leaseSpy) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := s.pingedBackend.Campaign(ctx, c)
	if err == nil {
		*s.l = l.(*pingedLease)
	}
	return l, err
}

// trailedBackend is a memory Backend whose leases' Deadline trails the
// proof of their last renewal by TTL/3, as a ZooKeeper lease's does, and
// which says so (backend.TrailingLease).
type trailedBackend struct{ backend.Backend }

func (b trailedBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return &trailedLease{Lease: l, trail: c.TTL / 3}, nil
}

type trailedLease struct {
	backend.Lease
	trail  time.Duration
	renews atomic.Int32
}

func (l *trailedLease) Deadline() time.Time  { return l.Lease.Deadline().Add(-l.trail) }
func (l *trailedLease) DeadlineTrails() bool { return true }
func (l *trailedLease) Renew(ctx context.Context) error {
	l.renews.Add(1)
	return l.Lease.Renew(ctx)
}

// A lease whose Deadline trails its proof by design is renewed once per
// RenewInterval (on the process-wide grid), not at the renewer's floor (a
// quarter of the interval) as a Deadline that always looks due would have
// it; the leader still never comes within the safety margin.
func TestTrailingDeadlineRenewsOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		var l *trailedLease
		r := start(t, trailedSpy{trailedBackend{memory.New()}, &l}, rec.options("alice"))
		rec.next(t, "elected")
		time.Sleep(10*ttl + ttl/6) // fake time: thirty intervals
		assert.True(t, r.e.IsLeader(), "still leading")
		rec.none(t)
		assert.InDelta(t, 30, l.renews.Load(), 1, "renewals in 30 renew intervals")
		assert.ErrorIs(t, r.stop(t), context.Canceled)
		rec.next(t, "revoked")
	})
}

// trailedSpy hands the lease of a trailedBackend's Campaign to the test.
type trailedSpy struct {
	trailedBackend
	l **trailedLease
}

func (s trailedSpy) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := s.trailedBackend.Campaign(ctx, c)
	if err == nil {
		*s.l = l.(*trailedLease)
	}
	return l, err
}

// A leader cut off from its backend retries its renewal ever sooner as the
// step-down nears; its log warns at the 1st, 2nd, 4th, 8th… failure of a
// run, not at each, so that an outage reads as a few lines, each with the
// count of failures so far.
func TestRenewFailuresWarnSparingly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged syncBuffer
		rec := newRecorder()
		opts := rec.options("alice")
		opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		var failures atomic.Int64
		opts.Observer = func(ev Event) {
			if ev.Kind == EventRenew && ev.Err != nil {
				failures.Add(1)
			}
		}
		b := memory.New()
		r := start(t, b, opts)
		rec.next(t, "elected")
		b.Isolate()
		rec.next(t, "revoked")
		assert.ErrorIs(t, r.stop(t), context.Canceled)
		n := int(failures.Load())
		warned := strings.Count(logged.String(), `msg="renew failed; retrying before the deadline"`)
		require.Greater(t, n, 4, "renewals failed before the step-down")
		want := bits.Len(uint(n)) // failures 1, 2, 4 … up to n
		assert.LessOrEqual(t, warned, want, "got %d warnings for %d failed renewals, want at most %d:\n%s", warned, n, want, logged.String())
		assert.Contains(t, logged.String(), "failures=1 ")
	})
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An OnElected that ignores its ctx is logged once its term has been over
// for a TTL (when Check turns unhealthy too), not only seen by Check.
func TestOnElectedIgnoringCtxIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged syncBuffer
		release := make(chan struct{})
		opts := &Options{Identity: "alice", TTL: ttl, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
			OnElected: func(context.Context, Term) { <-release }}
		r := start(t, memory.New(), opts)
		time.Sleep(ttl) // fake time: elected and leading
		r.cancel()
		time.Sleep(ttl + time.Second) // the term ended; OnElected still runs
		synctest.Wait()
		assert.Contains(t, logged.String(), `level=WARN msg="OnElected has not returned since its term ended`)
		close(release)
		assert.ErrorIs(t, r.stop(t), context.Canceled)
	})
}
