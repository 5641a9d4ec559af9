package compare_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/cmd/elect/internal/compare"
)

// limitedMem is the slow in-memory backend as a rate-limited client that
// counts its own requests (RequestRate and Requests, reached through backend.As),
// as a kube:// client is.
type limitedMem struct {
	slow
	rate   float64
	forgot *sync.Map // the elections Forget was called for, when set
}

func (l limitedMem) RequestRate() float64    { return l.rate }
func (l limitedMem) Requests() (int64, bool) { return l.calls.Load(), true }

// Forget records election and forgets nothing, as the kube driver's Forget does for a held election.
func (l limitedMem) Forget(_ context.Context, election string) (bool, error) {
	if l.forgot != nil {
		l.forgot.Store(election, true)
	}
	return false, nil
}

// On a client limited to 30 requests/s with a 3s TTL, the Renew workload
// holds 15 elections (what half of 30/s renews every TTL/3), not Options.Held; the
// report records the limit and the count, the tables say them, and the
// requests are counted from the backend's own count. Beside a backend
// with no limit, which holds all 100, the cleanup forgets and removes on
// the limited one only the 15 renew elections campaigned for on it: at the
// client's rate, forgetting all 100 would outlast the cleanup's bound.
func TestRenewHeldWithinRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		var forgot sync.Map
		open := func(context.Context) (*compare.Client, error) {
			p := store.Peer()
			return &compare.Client{Backend: limitedMem{slow{p, nil, new(atomic.Int64)}, 30, &forgot}, Closer: p}, nil
		}
		var cleaned []string
		cleanup := func(_ context.Context, elections []string) error {
			cleaned = elections
			return nil
		}
		o := compare.Short()
		o.TTL, o.Held = 3*time.Second, 100
		other := memory.New()
		defer other.Close()
		targets := []compare.Target{{Name: "limited", Open: open, Cleanup: cleanup}, memTarget("unlimited", other)}
		rep, err := compare.Run(t.Context(), targets, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Failed(); err != nil {
			t.Fatal(err)
		}
		b := rep.Backends[0]
		res := b.Result(compare.Renew)
		if b.RequestRate != 30 || res.Held != 15 {
			t.Errorf("RequestRate %v, renew held %d; want 30 and 15", b.RequestRate, res.Held)
		}
		if held := rep.Backends[1].Result(compare.Renew).Held; held != 100 {
			t.Errorf("the unlimited backend held %d renew elections; want 100", held)
		}
		if len(res.Samples) != 15*o.RenewRounds {
			t.Errorf("%d renewals; want %d, 15 per round", len(res.Samples), 15*o.RenewRounds)
		}
		if res.Requests == nil || res.Requests.PerHeld != 1 {
			t.Errorf("requests: %+v; want 1 per held election per round, from the backend's own count", res.Requests)
		}
		renewed := func(names []string) (n int) {
			for _, e := range names {
				if strings.Contains(e, "/renew/") {
					n++
				}
			}
			return n
		}
		var forgotten []string
		forgot.Range(func(k, _ any) bool {
			forgotten = append(forgotten, k.(string))
			return true
		})
		if n, m := renewed(forgotten), renewed(cleaned); n != 15 || m != 15 {
			t.Errorf("the cleanup forgot %d renew elections and removed %d; want the 15 held", n, m)
		}
		var text, md bytes.Buffer
		if err := rep.WriteTable(&text); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"client rate limit: 30 requests/s; renew held 15 of 100 elections"} {
			if !strings.Contains(text.String(), want) {
				t.Errorf("table lacks %q:\n%s", want, text.String())
			}
		}
		if err := rep.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		if want := "(15 held: client limit 30 req/s)"; !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	})
}

// refusingMem is the in-memory backend with a Forget the store refuses, as
// a Kubernetes role without delete on leases refuses it.
type refusingMem struct{ slow }

var errRefused = errors.New(`leases.coordination.k8s.io "x" is forbidden: User "limited" cannot delete resource "leases"`)

func (refusingMem) Forget(context.Context, string) (bool, error) { return false, errRefused }

// A backend that refuses to forget the run's elections is reported with
// the refusal, not only with the count of the records left behind.
func TestCleanupReportsRefusedForget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		open := func(context.Context) (*compare.Client, error) {
			p := store.Peer()
			return &compare.Client{Backend: refusingMem{slow{p, nil, nil}}, Closer: p}, nil
		}
		o := compare.Short()
		rep, err := compare.Run(t.Context(), []compare.Target{{Name: "refusing", Open: open}}, o)
		if err != nil {
			t.Fatal(err)
		}
		got := rep.Backends[0].CleanupError
		if !strings.Contains(got, "could not remove the records of") || !strings.Contains(got, errRefused.Error()) {
			t.Errorf("cleanup error %q; want the records not removed, and why: %v", got, errRefused)
		}
		if rep.Failed() == nil {
			t.Error("Failed: nil; want the records left behind reported as a failure")
		}
	})
}
