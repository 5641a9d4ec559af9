package wait

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(t.Context(), time.Second) {
			t.Fatal("Sleep(1s) on a live ctx: got false, want true: the duration passed")
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("Sleep(1s): returned after %v, want 1s", got)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start = time.Now()
		if Sleep(ctx, time.Hour) {
			t.Fatal("Sleep(1h) with a ctx ending after 100ms: got true, want false: ctx ended first")
		}
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Fatalf("Sleep(1h) with a 100ms ctx: returned after %v, want 100ms", got)
		}
	})
}
