package migrate_test

import (
	"testing"
	"testing/synctest"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/migrate"
)

// TestStatusEveryPhase: Status reports the leader whichever phase's URL
// reads it, at each point of the runbook: an old-only replica leading
// (steps 1 and 2), also while a PhaseBoth candidate holds the new side, a
// PhaseBoth leader, a PhaseNew leader after the marker, and a PhaseDone
// leader before and after Cleanup.
func TestStatusEveryPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		readers := map[migrate.Phase]*migrate.Backend{}
		for _, p := range []migrate.Phase{migrate.PhaseOld, migrate.PhaseBoth, migrate.PhaseNew, migrate.PhaseDone} {
			readers[p], _ = pair(t, old, new, p)
		}
		check := func(when string, phases []migrate.Phase, want backend.Holder, marked bool) {
			t.Helper()
			for _, p := range phases {
				s, err := readers[p].Status(t.Context(), election)
				if err != nil || s.Err() != nil {
					t.Fatalf("%s, phase %v: Status: %v, %v", when, p, err, s.Err())
				}
				if s.Leader.Identity != want.Identity || s.Leader.Token != want.Token || s.Marked != marked {
					t.Errorf("%s, phase %v URL: got leader %q token %#x, marked %v; want %q token %#x, marked %v",
						when, p, s.Leader.Identity, s.Leader.Token, s.Marked, want.Identity, want.Token, marked)
				}
			}
		}
		early := []migrate.Phase{migrate.PhaseOld, migrate.PhaseBoth, migrate.PhaseNew}

		plain := old.peer()
		defer plain.Close()
		lo, err := plain.Campaign(t.Context(), backend.Candidate{Election: election, Identity: "old-only", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		check("an old-only replica leads", early, backend.Holder{Identity: "old-only", Token: lo.Token()}, false)

		nn := new.Peer()
		defer nn.Close()
		ln, err := nn.Campaign(t.Context(), backend.Candidate{Election: election, Identity: "other", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		// A PhaseBoth candidate holds the new side while waiting for the
		// old one, held by an old-only leader: that one still leads.
		check("an old-only replica leads, another candidate holds the new side", early, backend.Holder{Identity: "old-only", Token: lo.Token()}, false)
		_ = lo.Release(t.Context())
		check("only the new side held, unmarked", early, backend.Holder{}, false)
		_ = ln.Release(t.Context())

		lb, err := readers[migrate.PhaseBoth].Campaign(t.Context(), cand)
		if err != nil {
			t.Fatal(err)
		}
		check("a PhaseBoth replica leads", early, backend.Holder{Identity: "a", Token: lb.Token()}, false)
		_ = lb.Release(t.Context())

		lnew, err := readers[migrate.PhaseNew].Campaign(t.Context(), cand)
		if err != nil {
			t.Fatal(err)
		}
		all := append(early, migrate.PhaseDone)
		check("a PhaseNew replica leads after the marker", all, backend.Holder{Identity: "a", Token: lnew.Token()}, true)
		_ = lnew.Release(t.Context())

		ld, err := readers[migrate.PhaseDone].Campaign(t.Context(), cand)
		if err != nil {
			t.Fatal(err)
		}
		check("a PhaseDone replica leads", all, backend.Holder{Identity: "a", Token: ld.Token()}, true)
		if _, err := readers[migrate.PhaseDone].Cleanup(t.Context(), election); err != nil {
			t.Fatal(err)
		}
		check("a PhaseDone replica leads after Cleanup", []migrate.Phase{migrate.PhaseDone}, backend.Holder{Identity: "a", Token: ld.Token()}, false)
		if s, _ := readers[migrate.PhaseDone].Status(t.Context(), election); s.OldCandidate {
			t.Errorf("after Cleanup: OldCandidate set with the old store empty")
		}
		_ = ld.Release(t.Context())
		check("no replica leads after Cleanup", []migrate.Phase{migrate.PhaseDone}, backend.Holder{}, false)

		lo, err = plain.Campaign(t.Context(), backend.Candidate{Election: election, Identity: "stray", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := readers[migrate.PhaseDone].Status(t.Context(), election); !s.OldCandidate || !s.Leader.IsZero() {
			t.Errorf("an old-only replica leads the old store after Cleanup: got %+v; want OldCandidate and no leader on the new store", s)
		}
		_ = lo.Release(t.Context())
	})
}
