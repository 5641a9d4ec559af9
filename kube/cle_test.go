package kube

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/internal/testproxy"
)

// cleTTL is the elector leader's TTL, and the client-go candidate's
// LeaseDuration, in the Coordinated Leader Election test: a leader that let
// its Lease expire, as client-go's own holders do when a preferredHolder
// is named, would hand over no sooner.
const cleTTL = 15 * time.Second

// An elector leader of a Lease hands it over by a graceful release when
// the apiserver's Coordinated Leader Election controller names a
// client-go candidate (LeaseCandidate of strategy OldestEmulationVersion,
// LeaderElector with Coordinated) as the Lease's preferredHolder: its term
// ends with a reason wrapping elector.ErrPreempted, its OnElected returns
// before the client-go candidate starts leading, the client-go candidate
// leads well within a lease duration, and the elector candidate does not
// take the Lease back.
func TestCoordinatedLeaderElectionHandOver(t *testing.T) {
	t.Parallel() // a Lease and a LeaseCandidate of its own; bounds of half a 15 s lease
	s := testServer(t)
	ctx := testCtx(t)
	name := testName(t)
	b := testBackend(t, s, nil)

	var mu sync.Mutex
	var terms int
	var returned time.Time // when the elector's first OnElected returned
	var reason error
	elected, revoked := make(chan struct{}), make(chan struct{})
	e, err := elector.New(b, name, &elector.Options{
		Identity: "elector-1",
		TTL:      cleTTL,
		Logger:   slog.New(slog.NewTextHandler(t.Output(), nil)), // shown when the test fails
		OnElected: func(ctx context.Context, _ elector.Term) {
			mu.Lock()
			terms++
			first := terms == 1
			mu.Unlock()
			if first {
				close(elected)
			}
			<-ctx.Done()
			if first {
				mu.Lock()
				returned = time.Now()
				mu.Unlock()
			}
		},
		OnRevoked: func(_ elector.Term, r error) {
			mu.Lock()
			defer mu.Unlock()
			if reason == nil {
				reason = r
				close(revoked)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(runCtx) }()
	defer func() { stopRun(); <-ran }()
	select {
	case <-elected:
	case <-ctx.Done():
		t.Fatal("the elector candidate was not elected")
	}

	goID := "client-go-" + name[len(name)-8:]
	g := runCoordinated(t, s, name, goID)
	start := time.Now()
	// The controller names the client-go candidate preferred holder at
	// once: it is the only candidate and fresh, so needs no ping.
	select {
	case <-revoked:
	case <-time.After(cleTTL / 2):
		t.Fatalf("the elector leader still leads %v after a coordinated candidate appeared, want it to yield once the controller names it preferred holder", cleTTL/2)
	}
	yielded := time.Now()
	if !g.leads(cleTTL / 2) {
		t.Fatalf("client-go candidate: not leading %v after the elector leader yielded, want well within a lease duration (%v): the elector leader releases", cleTTL/2, cleTTL)
	}
	mu.Lock()
	r, ret := reason, returned
	mu.Unlock()
	if !errors.Is(r, elector.ErrPreempted) {
		t.Errorf("OnRevoked reason: got %v, want one wrapping elector.ErrPreempted", r)
	}
	if ret.IsZero() || !ret.Before(g.at) {
		t.Errorf("OnElected returned at %v, client-go started leading at %v: want the return first, no overlap", ret, g.at)
	}
	t.Logf("coordinated candidate started → elector revoked: %v; → client-go leading: %v",
		yielded.Sub(start).Round(time.Millisecond), g.at.Sub(start).Round(time.Millisecond))

	// The elector candidate campaigns again, behind the new holder.
	select {
	case <-g.stopped:
		t.Fatal("client-go candidate: stopped leading, want it to keep the Lease")
	case <-time.After(2 * time.Second):
	}
	mu.Lock()
	n := terms
	mu.Unlock()
	if n != 1 {
		t.Errorf("elector candidate: %d terms, want 1: it must not take the Lease back from the preferred holder", n)
	}
}

// runCoordinated runs a client-go candidate of Coordinated Leader Election
// for the Lease name: its LeaseCandidate (binary and emulation version
// 1.37.2, strategy OldestEmulationVersion) and its LeaderElector with
// Coordinated set and a LeaseDuration of cleTTL, until t ends; its
// LeaseCandidate is then deleted.
func runCoordinated(t testing.TB, s server, name, id string) *goCandidate {
	return runCoordinatedAt(t, s, name, id, "1.37.2", cleTTL)
}

// runCoordinatedAt is runCoordinated with the candidate's binary and
// emulation version and its LeaseDuration given: the controller prefers
// the oldest emulation version.
func runCoordinatedAt(t testing.TB, s server, name, id, version string, leaseDuration time.Duration) *goCandidate {
	t.Helper()
	cfg := rest.CopyConfig(s.cfg)
	cfg.Host = "https://" + testproxy.New(t, s.addr()).Addr() // closed, with the connections, when t ends
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lc, informers, err := leaderelection.NewCandidate(cs, s.ns, id, name, version, version, coordinationv1.OldestEmulationVersion)
	if err != nil {
		t.Fatalf("NewCandidate: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { lc.Run(ctx) })
	g := startLeaderElector(t, id, leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration: leaseDuration,
		RenewDeadline: leaseDuration * 2 / 3,
		RetryPeriod:   goRetryPeriod,
		Coordinated:   true,
	})
	t.Cleanup(func() { // before startLeaderElector's: cleanups run last first
		g.stop()
		cancel()
		wg.Wait()
		if f, ok := informers.(interface{ Shutdown() }); ok {
			f.Shutdown()
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_ = cs.CoordinationV1beta1().LeaseCandidates(s.ns).Delete(dctx, id, metav1.DeleteOptions{})
	})
	return g
}
