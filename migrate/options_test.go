package migrate_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/migrate"
)

func TestNewRefusesInvalidOptions(t *testing.T) {
	old, new, plain := newMarkStore().peer(), memory.New(), memory.New()
	defer old.Close()
	defer new.Close()
	defer plain.Close() // implements no Marker
	for _, tc := range []struct {
		name     string
		old      backend.Backend
		phase    migrate.Phase
		opts     *migrate.Options
		mentions string
	}{
		{"phase zero", old, 0, nil, "phase"},
		{"phase too high", old, migrate.PhaseDone + 1, nil, "phase"},
		{"old nil before done", nil, migrate.PhaseBoth, nil, "old backend is nil"},
		{"epoch too high", old, migrate.PhaseBoth, &migrate.Options{Epoch: migrate.MaxEpoch}, "Options.Epoch"},
		{"negative renew interval", old, migrate.PhaseBoth, &migrate.Options{RenewInterval: -1}, "Options.RenewInterval"},
		{"no marker in phase new", plain, migrate.PhaseNew, nil, "Options.Marker"},
		{"bad new name", old, migrate.PhaseBoth, &migrate.Options{NewName: "a\nb"}, "Options.NewName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := migrate.New(tc.old, new, tc.phase, tc.opts)
			if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), tc.mentions) {
				t.Errorf("got %v; want ErrInvalid naming %s", err, tc.mentions)
			}
		})
	}
	if _, err := migrate.New(old, nil, migrate.PhaseOld, nil); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("nil new backend: got %v, want ErrInvalid", err)
	}
	if b, err := migrate.New(nil, new, migrate.PhaseDone, nil); err != nil {
		t.Errorf("PhaseDone without an old backend: got %v, want it accepted", err)
	} else {
		_ = b.Close()
	}
}

func TestToken(t *testing.T) {
	for _, tc := range []struct {
		epoch  uint16
		native uint64
		want   uint64
	}{
		{0, 1, 1},
		{0, migrate.MaxNative, 1<<48 - 1},
		{1, 1, 1<<48 | 1},
		{math.MaxUint16, migrate.MaxNative, math.MaxUint64},
	} {
		got, err := migrate.Token(tc.epoch, tc.native)
		if err != nil || got != tc.want {
			t.Errorf("Token(%d, %d): got %#x, %v; want %#x", tc.epoch, tc.native, got, err, tc.want)
		}
		if e, n := migrate.SplitToken(got); e != tc.epoch || n != tc.native {
			t.Errorf("SplitToken(%#x): got %d, %d; want %d, %d", got, e, n, tc.epoch, tc.native)
		}
	}
	// Every token of epoch e+1 is above every token of epoch e.
	lo, _ := migrate.Token(0, migrate.MaxNative)
	hi, _ := migrate.Token(1, 1)
	if hi <= lo {
		t.Errorf("epoch 1 token %#x not above epoch 0's highest %#x", hi, lo)
	}
	if _, err := migrate.Token(1, migrate.MaxNative+1); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("Token(1, 2^48): got %v, want ErrInvalid", err)
	}
}

func TestParsePhase(t *testing.T) {
	for p := migrate.PhaseOld; p <= migrate.PhaseDone; p++ {
		got, err := migrate.ParsePhase(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePhase(%q): got %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if _, err := migrate.ParsePhase("dual"); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("ParsePhase(dual): got %v, want ErrInvalid", err)
	}
}

// TestStatusAndCleanup follows one election's status through the phases,
// then cleans up: the old store is free again.
func TestStatusAndCleanup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		bb, ob := pair(t, old, new, migrate.PhaseBoth)
		l, err := bb.Campaign(t.Context(), cand)
		if err != nil {
			t.Fatal(err)
		}
		s, err := bb.Status(t.Context(), election)
		if err != nil || s.Marked || s.Old.Identity != "a" || s.New.Identity != "a" || s.Leader.Token != l.Token() {
			t.Errorf("Status in PhaseBoth: got %+v, %v; want a on both sides, leader token %d", s, err, l.Token())
		}
		_ = l.Release(t.Context())
		nb, _ := pair(t, old, new, migrate.PhaseNew)
		if l, err = nb.Campaign(t.Context(), cand); err != nil {
			t.Fatal(err)
		}
		s, err = bb.Status(t.Context(), election)
		if err != nil || !s.Marked || s.Old.Identity != "migrated-to-mem" || s.Leader.Token != l.Token() {
			t.Errorf("Status after PhaseNew won: got %+v, %v; want marked, leader token %#x", s, err, l.Token())
		}
		_ = l.Release(t.Context())
		if c, err := migrate.Cleanup(t.Context(), ob, election); err != nil || !c.Removed || c.Marker.Identity != "migrated-to-mem" {
			t.Fatalf("Cleanup: got %+v, %v; want the marker migrated-to-mem removed", c, err)
		}
		if _, err := old.mem.Leader(t.Context(), election); !errors.Is(err, backend.ErrNoLeader) {
			t.Errorf("old store after Cleanup: got %v, want no leader", err)
		}
		if _, err := migrate.Cleanup(t.Context(), nil, election); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("Cleanup with a nil marker: got %v, want ErrInvalid", err)
		}
	})
}
