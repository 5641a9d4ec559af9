package kube

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setPreferred writes spec.preferredHolder onto the Lease name through
// another client, as Coordinated Leader Election's controller does.
func setPreferred(t *testing.T, s server, name, preferred string) {
	t.Helper()
	ctx := testCtx(t)
	leases := s.client(t).Leases(s.ns)
	for {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get lease %s: %v", name, err)
		}
		strategy := coordinationv1.OldestEmulationVersion // the apiserver wants one with a preferred holder
		l.Spec.PreferredHolder, l.Spec.Strategy = &preferred, &strategy
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		switch {
		case err == nil:
			return
		case !apierrors.IsConflict(err):
			t.Fatalf("update lease %s: %v", name, err)
		}
	}
}

// A held lease asks to yield (backend.Yielder) once its Lease names
// another preferred holder, not when it names its own identity; it stays
// renewable meanwhile, so that its holder's work can stop before it
// releases.
func TestLeaseYieldsToPreferredHolder(t *testing.T) {
	t.Parallel() // a Lease of its own; a 30 s lease
	s := testServer(t)
	b := testBackend(t, s, nil)
	name := testName(t)
	// A TTL that lets the lease, renewed only by the test, outlive the
	// test's steps on a loaded machine.
	const ttl = 30 * time.Second
	l := mustCampaign(t, b, backendCand(name, "alice", ttl))

	setPreferred(t, s, name, "alice")
	if err := l.Renew(testCtx(t)); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	select { // the renewal read the record back: it was judged
	case <-l.Yield():
		t.Fatal("Yield: closed when the Lease names the holder itself as preferred, want it open")
	default:
	}

	setPreferred(t, s, name, "bob")
	select {
	case <-l.Yield():
	case <-time.After(ttl / 3):
		t.Fatalf("Yield: still open %v after the Lease named another preferred holder, want it closed at once", ttl/3)
	}
	select {
	case <-l.Lost():
		t.Fatal("Lost: closed, want the lease still held: a preferred holder is a request, not a loss")
	default:
	}
	if err := l.Renew(testCtx(t)); err != nil {
		t.Fatalf("Renew after the request to yield: got %v, want nil: the lease is held until released", err)
	}
	if err := l.Release(testCtx(t)); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// A Campaign leaves a free Lease that names another preferred holder to it
// for the candidate's TTL, then takes it: a preferred holder that never
// comes holds the election up for no longer.
func TestCampaignLeavesLeaseToPreferredHolder(t *testing.T) {
	t.Parallel() // a Lease of its own; its bound allows 5 s for the take-over
	s := testServer(t)
	a, b := testBackend(t, s, nil), testBackend(t, s, nil)
	name := testName(t)
	// The candidate's TTL, long beside the time a take-over takes on a
	// loaded machine: one that waits twice as long is told apart.
	const ttl = 10 * time.Second
	l := mustCampaign(t, a, cand(name, "alice"))
	setPreferred(t, s, name, "bob")
	if err := l.Release(testCtx(t)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	released := time.Now()
	ch := campaignAsync(testCtx(t), b, backendCand(name, "carol", ttl))
	pending(t, ch, ttl/2)
	r := await(t, ch, 2*ttl)
	if r.err != nil {
		t.Fatalf("Campaign: got %v, want the Lease once the preferred holder did not take it", r.err)
	}
	defer func() { _ = r.l.Release(context.Background()) }()
	if took := r.at.Sub(released); took < ttl || took > ttl+5*time.Second {
		t.Errorf("Campaign took the Lease %v after its release, want about the candidate's TTL (%v)", took, ttl)
	}
}
