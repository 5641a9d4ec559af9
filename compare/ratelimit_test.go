package compare_test

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/compare"
)

// limitedMem is the slow in-memory backend as a rate-limited client that
// counts its own requests (backend.RateLimited, backend.RequestCounter),
// as a kube:// client is.
type limitedMem struct {
	slow
	rate float64
}

func (l limitedMem) RequestRate() float64    { return l.rate }
func (l limitedMem) Requests() (int64, bool) { return l.calls.Load(), true }

// On a client limited to 30 requests/s with a 3s TTL, the Renew workload
// holds 15 elections (what half of 30/s renews every TTL/3), not Options.Held; the
// report records the limit and the count, the tables say them, and the
// requests are counted from the backend's own count.
func TestRenewHeldWithinRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		open := func(context.Context) (*compare.Client, error) {
			p := store.Peer()
			return &compare.Client{Backend: limitedMem{slow{p, nil, new(atomic.Int64)}, 30}, Closer: p}, nil
		}
		o := compare.Short()
		o.TTL, o.Held = 3*time.Second, 100
		rep, err := compare.Run(t.Context(), []compare.Target{{Name: "limited", Open: open}}, o)
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
		if len(res.Samples) != 15*o.RenewRounds {
			t.Errorf("%d renewals; want %d, 15 per round", len(res.Samples), 15*o.RenewRounds)
		}
		if res.Requests == nil || res.Requests.PerHeld != 1 {
			t.Errorf("requests: %+v; want 1 per held election per round, from the backend's own count", res.Requests)
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
