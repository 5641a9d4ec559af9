package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A renewal arriving behind queued reads is sent first, and other requests
// leave a tenth of the burst for renewals: a renewal that finds the bucket
// drained by reads is sent at once.
func TestRateLimiterRenewalsFirst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		r := NewRateLimiter(10, 10)
		n := 0
		for r.TryAccept() {
			n++
		}
		if n != 9 {
			t.Fatalf("other requests took %d tokens of a burst of 10; want 9: one is kept for renewals", n)
		}
		if err := r.Wait(renewal(ctx)); err != nil {
			t.Fatalf("renewal with the kept token: %v", err)
		}
		order := make(chan string, 8)
		for range 3 {
			go func() {
				if r.Wait(ctx) == nil {
					order <- "read"
				}
			}()
		}
		synctest.Wait() // the reads are queued
		go func() {
			if r.Wait(renewal(ctx)) == nil {
				order <- "renewal"
			}
		}()
		synctest.Wait()
		if got := <-order; got != "renewal" {
			t.Fatalf("first request sent after the bucket refilled: %s; want the renewal queued behind 3 reads", got)
		}
		for range 3 {
			if got := <-order; got != "read" {
				t.Fatalf("got %s; want the reads after the renewal", got)
			}
		}
	})
}

// A request the limiter cannot send before its context ends fails with an
// error naming the limiter's qps and burst, not a context error.
func TestRateLimiterErrorNamesTheLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := NewRateLimiter(1, 1)
		if err := r.Wait(renewal(t.Context())); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(renewal(t.Context()), 100*time.Millisecond)
		defer cancel()
		err := r.Wait(ctx)
		var le *LimitError
		if !errors.As(err, &le) || !le.Renewal || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait past its deadline: got %v; want a *LimitError of a renewal", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "qps 1") || !strings.Contains(msg, "burst 1") {
			t.Errorf("error %q; want it to name qps 1 and burst 1", msg)
		}
		if n := r.LateRenewals(); n != 1 {
			t.Errorf("LateRenewals = %d; want 1", n)
		}
		if err := r.Wait(t.Context()); err != nil {
			t.Errorf("Wait after the abandoned one: %v; want the next token", err)
		}
	})
}
