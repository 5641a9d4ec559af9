// Package backendtest is the conformance suite every driver of
// [backend.Backend] runs, in the manner of testing/fstest.TestFS: a driver
// supplies a [HarnessMaker] and calls [Run] from its conformance_test.go.
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
//			return newHarness(t) // Backends on one shared test store
//		})
//	}
//
// Each named subtest gets a fresh [Harness] and a watchdog. Abilities a
// harness may offer to simulate faults ([Crasher], [Expirer], [Isolator]) are
// found by type assertion; subtests that need a missing one are skipped with
// a message naming it.
//
// Failure messages read "got X, want Y: rule".
package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Harness gives the suite Backends on one shared store. It is used by one
// subtest at a time.
type Harness interface {
	// MakeBackend returns a new Backend on the harness's store, as a
	// separate process would have: Backends from one Harness contend for
	// the same elections. The suite closes each Backend it makes.
	MakeBackend(ctx context.Context) (backend.Backend, error)

	// TTL is the lease TTL the suite campaigns with: the shortest the
	// driver supports well on its test store. The suite's waits and bounds
	// scale with it.
	TTL() time.Duration

	// Close releases the harness's resources, after every Backend it made
	// has been closed.
	Close()
}

// HarnessMaker makes a fresh Harness for one subtest. Elections used by
// different subtests have distinct names, so a maker may reuse one store.
// [Run] calls it from one subtest at a time, but the Harnesses it made are
// used at once, so they must not share state beyond the store.
type HarnessMaker func(ctx context.Context, t *testing.T) (Harness, error)

// Crasher is an optional Harness ability: simulate the crash of the process
// that owns b. After Crash returns, b sends nothing more to the store (no
// keepalives, no release), and every lease of b lapses at the store after its
// TTL. Drivers whose leases are kept alive without [backend.Lease.Renew] (a
// session keepalive) need it for the expiry subtests.
type Crasher interface {
	Crash(b backend.Backend)
}

// Expirer is an optional Harness ability: make the store drop lease l as if
// its TTL had run out, while its owner is alive and unaware (for example by
// revoking an etcd lease or deleting a znode through another client).
// Without it the suite stops renewing l and waits past its Deadline.
type Expirer interface {
	Expire(l backend.Lease)
}

// Isolator is an optional Harness ability: cut b off from the store, as a
// network partition would. Until Heal, b's requests fail or time out (never
// succeed), and b's leases lapse at the store after their TTL.
type Isolator interface {
	Isolate(b backend.Backend)
	Heal(b backend.Backend)
}

// TTLRounder is an optional Harness ability: the granularity to which the
// driver rounds [backend.Candidate.TTL] up (etcd: whole seconds). Without it
// the suite allows 1 ms.
type TTLRounder interface {
	TTLGranularity() time.Duration
}

// ExpiryLagger is an optional Harness ability: how long past its TTL a
// crashed process's registry entry may still be listed, before any
// latency, because the driver's readers judge expiry on a clock they sample
// rather than the store expiring the entry (kube: whole-second stamps and
// Date headers, and a second of skew between apiservers). The suite adds it
// to its own allowance, which is left for latency and polling. Without it
// the suite adds none.
type ExpiryLagger interface {
	ExpiryLag() time.Duration
}
