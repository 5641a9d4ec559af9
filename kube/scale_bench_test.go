package kube

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testproxy"
)

// heldElections is how many elections BenchmarkHeld holds on one Backend.
const heldElections = 1000

// BenchmarkHeld holds 1,000 elections on one Backend and renews every one
// of them once per round, as one renewal interval of a process that holds
// them all does. It reports what the apiserver counted
// (apiserver_request_total for leases, from its /metrics) per round and per
// held election, and the watches on leases open meanwhile
// (apiserver_longrunning_requests: the Backend's one watch of the
// namespace's Leases, which costs while open, not per round). The apiserver's own identity Lease, renewed
// every 10 s, adds its updates to the count. Run on a quiet machine:
//
//	cd kube && go test -run '^$' -bench BenchmarkHeld -benchtime 10x
func BenchmarkHeld(b *testing.B) {
	s := testServer(b)
	kb := testBackend(b, s, nil)
	prefix := testName(b)
	leases := make([]backend.Lease, heldElections)
	parallel(b, len(leases), func(i int) error {
		l, err := kb.Campaign(testCtx(b), backendCand(fmt.Sprintf("%s-%d", prefix, i), "holder", time.Minute))
		leases[i] = l
		return err
	})
	defer tolerate(b, len(leases), func(i int) error { return leases[i].Release(context.Background()) })
	before := leaseMetrics(b, s)
	failed := 0
	b.ResetTimer()
	for range b.N {
		// A renewal that times out on a loaded machine is retried by
		// the portable layer within the lease; only a lost lease fails.
		failed += tolerate(b, len(leases), func(i int) error { return leases[i].Renew(testCtx(b)) })
	}
	b.StopTimer()
	after := leaseMetrics(b, s)
	requests := after.requests - before.requests
	b.ReportMetric(requests/float64(b.N), "requests/round")
	b.ReportMetric(requests/float64(b.N)/heldElections, "requests/held/round")
	b.ReportMetric(float64(failed)/float64(b.N), "failed-renewals/round")
	b.ReportMetric(after.watches, "watches")
}

// tolerate runs f(0..n-1) on 32 goroutines, fails b on an error wrapping
// [backend.ErrLost], and returns how many calls failed otherwise.
func tolerate(b *testing.B, n int, f func(i int) error) int {
	b.Helper()
	var mu sync.Mutex
	failed := 0
	parallel(b, n, func(i int) error {
		err := f(i)
		if err == nil || errors.Is(err, backend.ErrLost) {
			return err
		}
		mu.Lock()
		failed++
		mu.Unlock()
		return nil
	})
	return failed
}

// parallel runs f(0..n-1) on 32 goroutines and fails b on the first error.
func parallel(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		b.Fatalf("%d of %d failed; first: %v", len(errs), n, errs[0])
	}
}

// leaseCounts are the apiserver's counters for leases.
type leaseCounts struct {
	requests float64 // apiserver_request_total, every verb and code
	watches  float64 // apiserver_longrunning_requests with verb WATCH
}

// leaseMetrics reads the apiserver's /metrics with the test's credentials
// and sums its lease series.
func leaseMetrics(b *testing.B, s server) leaseCounts {
	b.Helper()
	// Through a proxy of its own, whose Close ends the client's
	// connections: nothing of the client outlives the read.
	p := testproxy.New(b, s.addr())
	defer p.Close()
	cfg := rest.CopyConfig(s.cfg)
	cfg.Host = "https://" + p.Addr()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := hc.Get(cfg.Host + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET /metrics: %s", resp.Status)
	}
	var c leaseCounts
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `resource="leases"`) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			c.requests += v
		case strings.HasPrefix(line, "apiserver_longrunning_requests{") && strings.Contains(line, `verb="WATCH"`):
			c.watches += v
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return c
}
