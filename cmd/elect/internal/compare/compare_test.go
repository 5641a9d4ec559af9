package compare_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/cmd/elect/internal/compare"
	"github.com/leaderkit/elector/partition"
)

// latency is the store latency the slow backend simulates per call.
const latency = time.Millisecond

// slow wraps a backend so that every call takes latency (on the synctest
// clock) before it reaches the store: deterministic numbers to check.
type slow struct {
	backend.Backend
	hook  func(election string) // called at each Campaign, when set
	calls *atomic.Int64         // counts every call, when set
}

func (s slow) count() { count(s.calls) }

func count(calls *atomic.Int64) {
	if calls != nil {
		calls.Add(1)
	}
}

func (s slow) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if s.hook != nil {
		s.hook(c.Election)
	}
	s.count()
	time.Sleep(latency)
	l, err := s.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return slowLease{l, s.calls}, nil
}

func (s slow) Leader(ctx context.Context, election string) (backend.Holder, error) {
	s.count()
	time.Sleep(latency)
	return s.Backend.Leader(ctx, election)
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

type slowLease struct {
	backend.Lease
	calls *atomic.Int64
}

func (l slowLease) Renew(ctx context.Context) error {
	count(l.calls)
	time.Sleep(latency)
	return l.Lease.Renew(ctx)
}

func (l slowLease) Release(ctx context.Context) error {
	count(l.calls)
	time.Sleep(latency)
	return l.Lease.Release(ctx)
}

// memTarget is a Target on store, whose crashable client is a peer that
// Crash stops without freeing its leases.
func memTarget(name string, store *memory.Backend) compare.Target {
	return memTargetClose(name, store, false, nil)
}

// memTargetClose is memTarget whose clients, when lapse is set, close like
// a Redlock client: their leases lapse at the TTL instead of being freed.
func memTargetClose(name string, store *memory.Backend, lapse bool, hook func(string)) compare.Target {
	open := func(context.Context) (*compare.Client, error) {
		p := store.Peer()
		var closer io.Closer = p
		if lapse {
			closer = closerFunc(func() error { p.Crash(); return nil })
		}
		return &compare.Client{Backend: slow{p, hook, nil}, Closer: closer}, nil
	}
	return compare.Target{
		Name: name,
		Open: open,
		OpenCrashable: func(ctx context.Context) (*compare.Client, error) {
			p := store.Peer()
			return &compare.Client{Backend: slow{p, hook, nil}, Closer: p, Crash: p.Crash}, nil
		},
		// Every call of the counted client is one request.
		OpenCounted: func(ctx context.Context) (*compare.Client, error) {
			c, _ := open(ctx)
			calls := new(atomic.Int64)
			c.Backend = slow{c.Backend.(slow).Backend, hook, calls}
			c.Requests = calls.Load
			return c, nil
		},
		TokenSource: "a counter in memory", Safety: "one process",
	}
}

// runMem runs a short comparison of two in-memory stores in a synctest
// bubble and returns the report and the stores.
func runMem(t *testing.T, o *compare.Options) (*compare.Report, []*memory.Backend) {
	t.Helper()
	stores := []*memory.Backend{memory.New(), memory.New()}
	t.Cleanup(func() {
		for _, s := range stores {
			s.Close()
		}
	})
	rep, err := compare.Run(t.Context(), []compare.Target{memTarget("mem-a", stores[0]), memTarget("mem-b", stores[1])}, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep, stores
}

// TestRunMemory checks every number of a short run on stores whose calls
// take exactly 1ms.
func TestRunMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := compare.Short()
		o.Prefix = "elect-compare/test"
		var progress []compare.Progress
		o.Progress = func(p compare.Progress) { progress = append(progress, p) }
		rep, _ := runMem(t, o)
		if err := rep.Failed(); err != nil {
			t.Fatalf("the run failed: %v", err)
		}
		ttl := rep.Options.TTL
		want := map[string]time.Duration{ // p50 = max for every workload here
			compare.Acquire:    2 * latency, // campaign + release
			compare.Throughput: 2 * latency,
			compare.Handover:   latency, // the release's own latency; the waiter wakes at once
			compare.Renew:      latency,
			compare.Failover:   ttl + latency, // the renewal reaches the store 1ms after it was sent
		}
		counts := map[string]int{compare.Acquire: o.Trials, compare.Handover: o.Trials,
			compare.Renew: o.Held * o.RenewRounds, compare.Failover: o.FailoverTrials}
		for _, b := range rep.Backends {
			if b.TTLFloor != 100*time.Millisecond {
				t.Errorf("%s: TTL floor %v; want 100ms, the first FloorTTL (memory grants down to 10ms)", b.Name, b.TTLFloor)
			}
			for _, res := range b.Results {
				if res.Workload == compare.Join || res.Workload == compare.Leave {
					checkRebalance(t, b.Name, res, o)
					continue
				}
				if res.P50 != want[res.Workload] || res.Max != want[res.Workload] {
					t.Errorf("%s %s: p50 %v, max %v; want both %v", b.Name, res.Workload, res.P50, res.Max, want[res.Workload])
				}
				if n, ok := counts[res.Workload]; ok && len(res.Samples) != n {
					t.Errorf("%s %s: %d samples; want %d", b.Name, res.Workload, len(res.Samples), n)
				}
			}
			// Only the renewals fall in the window, Held per round, the window
			// being RenewRounds renewal intervals.
			window := time.Duration(o.RenewRounds) * (ttl / 3)
			wantReq := compare.RequestCount{Total: int64(o.Held * o.RenewRounds), Window: window,
				PerHeld: 1, PerSecond: float64(o.Held*o.RenewRounds) / window.Seconds()}
			if got := b.Result(compare.Renew).Requests; got == nil || *got != wantReq {
				t.Errorf("%s renew: requests %+v; want %+v", b.Name, got, wantReq)
			}
			// 4 goroutines, each 150 Campaign+Release of 2ms in 300ms.
			if got := b.Result(compare.Throughput).PerSecond; got != 2000 {
				t.Errorf("%s throughput: %v/s; want 2000 (4 goroutines at 2ms per op)", b.Name, got)
			}
			if len(b.Leftover) != 0 || b.CleanupError != "" {
				t.Errorf("%s: left behind %q, cleanup error %q; want nothing", b.Name, b.Leftover, b.CleanupError)
			}
		}
		checkProgress(t, progress)
	})
}

// checkRebalance checks a rebalance result of a run on the memory store.
// With a 2s TTL members poll every 500ms: a joiner campaigns once it read
// the same member list in two polls in a row, and the others see it within
// a poll; a leave is seen within a poll and handed over at once.
func checkRebalance(t *testing.T, name string, res *compare.Result, o *compare.Options) {
	t.Helper()
	// A joiner into a group whose partitions are all held places at once
	// (package partition, Timing), so a join needs no settle wait: it ends
	// once the others' next poll sees the joiner and they hand over.
	lo, hi := time.Duration(0), 2*time.Second
	if res.Workload == compare.Leave {
		hi = time.Second
	}
	if len(res.Samples) != o.RebalanceTrials || res.Errors != 0 || res.Samples[0] <= lo || res.Max > hi {
		t.Errorf("%s %s: samples %v, %d errors (%s); want %d samples in (%v, %v]", name, res.Workload, res.Samples,
			res.Errors, res.FirstError, o.RebalanceTrials, lo, hi)
	}
}

func checkProgress(t *testing.T, all []compare.Progress) {
	t.Helper()
	var ps []compare.Progress
	cleanup := 0
	for _, p := range all {
		if p.Phase != compare.PhaseCleanup {
			ps = append(ps, p)
			continue
		}
		cleanup++
		if p.Note == "" || !strings.HasPrefix(p.String(), "cleanup: ") {
			t.Errorf("cleanup progress %q; want \"cleanup: \" and a note", p)
		}
	}
	if cleanup > 0 && all[len(all)-cleanup].Phase != compare.PhaseCleanup {
		t.Errorf("cleanup progress before the last trial: %v", all)
	}
	if cleanup == 0 {
		t.Error("no progress of the cleanup reported")
	}
	if len(ps) == 0 {
		t.Fatal("no progress reported")
	}
	last := ps[len(ps)-1]
	if last.Done != last.Total || last.Left != 0 {
		t.Errorf("last progress %v; want every trial done and nothing left", last)
	}
	for i, p := range ps {
		if p.Done != i+1 || p.PhaseDone > p.PhaseTotal || p.Left < 0 {
			t.Errorf("progress %d: %+v; want done %d, phase done within phase total, time left ≥ 0", i, p, i+1)
		}
	}
	if !strings.Contains(last.String(), "left") {
		t.Errorf("Progress.String() = %q; want the time left", last.String())
	}
}

// TestRunInterleaves: trial i of every backend runs before trial i+1 of
// any, and each round starts with another backend.
func TestRunInterleaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := compare.Short()
		var order []string
		o.Progress = func(p compare.Progress) {
			if p.Phase == compare.Acquire {
				order = append(order, p.Backend)
			}
		}
		runMem(t, o)
		want := []string{"mem-a", "mem-b", "mem-b", "mem-a", "mem-a", "mem-b"}
		if len(order) < len(want) || fmt.Sprint(order[:len(want)]) != fmt.Sprint(want) {
			t.Errorf("acquire trials ran on %v; want them to begin %v", order, want)
		}
	})
}

// TestRenewWindowsOverlap: each backend's renewal window (RenewRounds
// intervals from its first round) runs beside the other backends' rounds,
// so the Renew phase lasts one window however many backends there are,
// and every backend's count holds its own window's requests, no more.
func TestRenewWindowsOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := compare.Short()
		o.RenewRounds = 1
		var renewed []time.Duration // when each backend's round ended
		o.Progress = func(p compare.Progress) {
			if p.Phase == compare.Renew {
				renewed = append(renewed, p.Elapsed)
			}
		}
		rep, _ := runMem(t, o)
		interval := rep.Options.TTL / 3
		if len(renewed) != 2 || renewed[1]-renewed[0] >= interval {
			t.Errorf("the backends' rounds ended at %v; want two, less than an interval (%v) apart: the second need not wait out the first's window", renewed, interval)
		}
		want := compare.RequestCount{Total: int64(o.Held), Window: interval, PerHeld: 1, PerSecond: float64(o.Held) / interval.Seconds()}
		for _, b := range rep.Backends {
			if got := b.Result(compare.Renew).Requests; got == nil || *got != want {
				t.Errorf("%s renew: requests %+v; want %+v", b.Name, got, want)
			}
		}
	})
}

// TestRunCancelled: a run whose ctx ends in the middle of a trial holding
// leases releases them all before it returns, on clients whose Close leaves
// leases to lapse (as Redlock's does), and waits for a crashed holder's
// lease to lapse. The run is cancelled when a campaign for the election
// named is made for the n-th time: in the middle of taking the Held leases,
// while a waiter queues behind a holder, while a crash trial's holder holds,
// while the partition group's members take their membership slots (the
// third slot campaign: the first two members start, the joiner follows;
// slots are taken concurrently, so which slot is third varies).
func TestRunCancelled(t *testing.T) {
	for _, tc := range []struct {
		election string
		n        int
	}{{"renew/10", 1}, {"handover", 2}, {"failover/0", 2}, {"rebalance/m/", 3}} {
		t.Run(tc.election, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				o := compare.Short()
				o.Prefix = "elect-compare/cancel"
				var seen atomic.Int64 // members campaign concurrently
				hook := func(election string) {
					if name, ok := strings.CutPrefix(election, o.Prefix+"/"+tc.election); ok && (name == "" || strings.HasSuffix(tc.election, "/")) {
						if seen.Add(1) == int64(tc.n) {
							cancel()
						}
					}
				}
				store := memory.New()
				defer store.Close()
				rep, err := compare.Run(ctx, []compare.Target{memTargetClose("mem", store, true, hook)}, o)
				if !errors.Is(err, context.Canceled) || rep == nil || !rep.Interrupted {
					t.Fatalf("Run: %v, report %v; want context.Canceled and an interrupted report", err, rep)
				}
				if seen.Load() < int64(tc.n) {
					t.Fatalf("%d campaigns for %s; the run was not cancelled where the test wants", seen.Load(), tc.election)
				}
				for _, name := range electionNames(o) {
					if h, err := store.Leader(context.Background(), name); !errors.Is(err, backend.ErrNoLeader) {
						t.Errorf("election %s: leader %+v, %v after the run; want none", name, h, err)
					}
				}
				if len(rep.Backends[0].Leftover) != 0 {
					t.Errorf("report says left behind: %q", rep.Backends[0].Leftover)
				}
			})
		})
	}
}

// electionNames lists every election a run with o may create.
func electionNames(o *compare.Options) []string {
	p := o.Prefix + "/"
	names := []string{p + "warm-up", p + "ttl-floor", p + "acquire", p + "handover"}
	for i := range o.Held {
		names = append(names, fmt.Sprintf("%srenew/%d", p, i))
	}
	for i := range o.Concurrency {
		names = append(names, fmt.Sprintf("%sthroughput/%d", p, i))
	}
	for i := range o.FailoverTrials {
		names = append(names, fmt.Sprintf("%sfailover/%d", p, i))
	}
	for i := range o.Partitions {
		names = append(names, partition.Election(p+"rebalance", i))
	}
	for i := range o.Members + 2 {
		names = append(names, fmt.Sprintf("%srebalance/m/%d", p, i))
	}
	return names
}

// TestOptionsRefused: bad options are refused before anything runs, naming
// the field and the range.
func TestOptionsRefused(t *testing.T) {
	store := memory.New()
	defer store.Close()
	targets := []compare.Target{memTarget("mem", store)}
	for _, tc := range []struct {
		o    compare.Options
		want string
	}{
		{compare.Options{Trials: -1}, "Options.Trials is -1; want 0 (default) or 1 to"},
		{compare.Options{TTL: time.Millisecond}, "Options.TTL is 1ms; want 0 (default 2s) or 10ms to 1h"},
		{compare.Options{Prefix: "jobs/x"}, `Options.Prefix is "jobs/x"; want "elect-compare/"`},
		{compare.Options{FloorTTLs: []time.Duration{time.Second, time.Second}}, "Options.FloorTTLs[1] is 1s; want increasing"},
	} {
		_, err := compare.Run(t.Context(), targets, &tc.o)
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("Run(%+v): %v; want ErrInvalid saying %q", tc.o, err, tc.want)
		}
	}
	_, err := compare.Run(t.Context(), append(targets, targets[0]), nil)
	if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(fmt.Sprint(err), `"mem" is used twice`) {
		t.Errorf("Run with a name twice: %v; want ErrInvalid naming it", err)
	}
}

func TestPercentile(t *testing.T) {
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = time.Duration(i+1) * time.Millisecond
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 95: 95 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 0.1: time.Millisecond} {
		if got := compare.Percentile(s, p); got != want {
			t.Errorf("Percentile(1..100ms, %v) = %v; want %v", p, got, want)
		}
	}
	if got := compare.Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v; want 0", got)
	}
}
