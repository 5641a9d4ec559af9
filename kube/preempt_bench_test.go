package kube

import (
	"fmt"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/prioritytest"
)

// Preemption: while a lower candidate leads, the time from a preferred
// candidate's start to its leading. elector: Options.Priority, a yield by
// release (TTL 3 s). client-go: Coordinated Leader Election, the preferred
// candidate's LeaseCandidate of an older emulation version, the holder
// ending its term by letting its Lease expire (LeaseDuration 3 s here; 15 s
// in client-go's controllers). A quiet machine and a few rounds:
//
//	cd kube && go test -run '^$' -bench Preemption -benchtime 10x
func BenchmarkPreemption(b *testing.B) {
	s := testServer(b)
	warmUp(b, s)
	b.Run("elector", func(b *testing.B) {
		prioritytest.Bench(b, MinTTL, func(tb testing.TB) backend.Backend { return testBackend(tb, s, nil) })
	})
	b.Run("client-go-CLE", func(b *testing.B) {
		var took []time.Duration
		for i := 0; b.Loop(); i++ {
			name := testName(b)
			low := runCoordinatedAt(b, s, name, fmt.Sprintf("low-%d", i), "1.37.2", goLeaseDuration)
			if !low.leads(3 * goLeaseDuration) {
				b.Fatal("client-go: the lower candidate did not lead a free Lease")
			}
			start := time.Now()
			high := runCoordinatedAt(b, s, name, fmt.Sprintf("high-%d", i), "1.36.0", goLeaseDuration)
			if !high.leads(10 * goLeaseDuration) {
				b.Fatal("client-go: the preferred candidate did not lead")
			}
			took = append(took, high.at.Sub(start))
			high.stop()
			low.stop()
		}
		prioritytest.Report(b, took)
	})
}
