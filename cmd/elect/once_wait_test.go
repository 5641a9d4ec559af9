//go:build unix

package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// silentLeader is a backend whose Leader never answers, as an unreachable
// etcd behaves: it returns only when its ctx ends.
type silentLeader struct{ *memory.Backend }

func (silentLeader) Leader(ctx context.Context, _ string) (backend.Holder, error) {
	<-ctx.Done()
	return backend.Holder{}, ctx.Err()
}

// TestOnceLastLookIsShort: after --wait has passed without a win, the last
// look for another leader is short, so that run --once ends about --wait
// after it started, not twice --wait (hardening issue, defect 8: the look had
// a timeout of --wait itself, 4.9 s in all for --wait 2s against an
// unreachable etcd).
func TestOnceLastLookIsShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		e, err := elector.New(silentLeader{store}, "e", nil)
		if err != nil {
			t.Fatal(err)
		}
		r := &runner{cfg: &runConfig{wait: 3 * time.Second}, log: slog.New(slog.DiscardHandler), e: e}
		start := time.Now()
		err = r.notElected()
		if err == nil || !strings.Contains(err.Error(), "not elected within --wait 3s") {
			t.Errorf("notElected: got %v, want an error saying it was not elected within --wait", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("the last look took %v; want at most 1s (--wait/10 = 300ms), not another --wait", took)
		}
	})
}
