package main

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend/memory"
)

// TestOncePerTick: three gocron schedulers behind one election run the job
// exactly once per tick, across a resignation that hands the election over.
func TestOncePerTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		open := func(context.Context) (elector.Backend, io.Closer, error) {
			p := store.Peer()
			return p, p, nil
		}
		const ticks = 10
		start := time.Now()
		fires, err := run(t.Context(), open, time.Second, ticks)
		if err != nil {
			t.Fatal(err)
		}
		perTick := make(map[time.Duration]int)
		tokens := make(map[uint64]bool)
		for _, f := range fires {
			perTick[f.at.Sub(start).Round(time.Second)]++
			tokens[f.token] = true
		}
		for n := 1; n <= ticks; n++ {
			if got := perTick[time.Duration(n)*time.Second]; got != 1 {
				t.Errorf("tick %d: the job ran %d times, want exactly once across the three schedulers", n, got)
			}
		}
		if len(fires) != ticks {
			t.Errorf("got %d runs over %d ticks, want %d: %+v", len(fires), ticks, ticks, fires)
		}
		if len(tokens) != 2 {
			t.Errorf("got runs under %d terms (tokens %v), want 2: the leader resigned halfway", len(tokens), tokens)
		}
	})
}
