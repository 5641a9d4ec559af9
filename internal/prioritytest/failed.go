package prioritytest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Broken is a Backend whose next Register of "alice" fails after its write
// may have reached the store, with the driver's clean-up of it failing
// too, as FailedRegister needs.
type Broken struct {
	Backend  backend.Backend
	Election string
	// Heal ends the faults.
	Heal func()
	// Read lists the election's entries from a Backend of its own, where
	// the failed Register's write is.
	Read func(ctx context.Context) ([]backend.Entry, error)
}

// FailedRegister checks that the entry a failed Register may have left
// behind is never listed beside the candidate's next one: after a Register
// of the same candidate readers list that one alone, and after Close
// none. setup returns the Backend under test with its faults armed.
func FailedRegister(t *testing.T, setup func(t *testing.T) Broken) {
	for _, then := range []string{"register", "close"} {
		t.Run(then, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			br := setup(t)
			reg, ok := br.Backend.(backend.Registry)
			if !ok {
				t.Fatalf("%T is not a backend.Registry", br.Backend)
			}
			c := backend.Candidate{Election: br.Election, Identity: "alice", TTL: time.Minute}
			if r, err := reg.Register(ctx, c, false); err == nil {
				t.Fatalf("Register with the store's replies lost: got %s, want an error", r.ID())
			}
			br.Heal()
			var want []backend.Entry
			if then == "register" {
				c.Priority = 2
				r, err := reg.Register(ctx, c, false)
				if err != nil {
					t.Fatal(err)
				}
				want = []backend.Entry{{ID: r.ID(), Identity: "alice", Priority: 2}}
			} else if err := br.Backend.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := br.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Entries after a Register that failed with its clean-up, then %s: got %+v, want %+v", then, got, want)
			}
		})
	}
}
