package kube

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLostOnForeignWrite: a holder whose Lease another writer takes (a
// client-go candidate, kubectl) or deletes learns it from its watch of the
// Lease, as soon as the apiserver sends the event: Lost closes well before
// the next renewal, which the test never makes.
func TestLostOnForeignWrite(t *testing.T) {
	t.Parallel() // Leases of its own; it allows 10 s for one watch event
	s := testServer(t)
	raw := s.client(t).Leases(s.ns)
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, name string) error
	}{{
		name: "taken",
		write: func(ctx context.Context, name string) error {
			l, err := raw.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			id, n := "intruder", transitionsOf(l)+1
			l.Spec.HolderIdentity, l.Spec.LeaseTransitions = &id, &n
			_, err = raw.Update(ctx, l, metav1.UpdateOptions{})
			return err
		},
	}, {
		name: "deleted",
		write: func(ctx context.Context, name string) error {
			return raw.Delete(ctx, name, metav1.DeleteOptions{})
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBackend(t, s, nil)
			elec := testName(t)
			// A long TTL: the watch has seconds to spare on a loaded machine
			// before the renewal it must beat.
			const ttl = 30 * time.Second
			l := mustCampaign(t, b, backendCand(elec, "holder", ttl))
			select {
			case <-l.Lost():
				t.Fatal("Lost closed before the foreign write; want it open while the lease is held")
			default:
			}
			if err := tc.write(testCtx(t), l.name); err != nil {
				t.Fatalf("foreign write: %v", err)
			}
			written := time.Now()
			// The renewal the portable layer would make comes a third of
			// the TTL after the take-over; the watch must be faster than that.
			within := ttl / 3
			select {
			case <-l.Lost():
				t.Logf("Lost closed %v after the foreign write", time.Since(written).Round(time.Millisecond))
			case <-time.After(within):
				t.Fatalf("Lost still open %v after the Lease was %s; want it closed from the watch, before any renewal", within, tc.name)
			}
			if err := l.Renew(testCtx(t)); err == nil {
				t.Errorf("Renew after the Lease was %s: got nil; want ErrLost", tc.name)
			}
		})
	}
}
