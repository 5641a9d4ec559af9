package compare_test

import (
	"context"
	"fmt"
	"time"

	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/cmd/elect/internal/compare"
)

// A short run of every workload on the in-memory backend. A real run names
// the servers instead: compare.URLTarget("etcd://e1,e2,e3", nil).
func Example() {
	store := memory.New()
	defer store.Close()
	open := func(crashable bool) func(context.Context) (*compare.Client, error) {
		return func(context.Context) (*compare.Client, error) {
			p := store.Peer() // a client of its own, as a process would have
			c := &compare.Client{Backend: p, Closer: p}
			if crashable {
				c.Crash = p.Crash
			}
			return c, nil
		}
	}
	target := compare.Target{
		Name: "memory", Open: open(false), OpenCrashable: open(true),
		TokenSource: "a counter in memory", Safety: "one process",
	}
	o := compare.Short()
	o.TTL = 200 * time.Millisecond
	rep, err := compare.Run(context.Background(), []compare.Target{target}, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := rep.Failed(); err != nil {
		fmt.Println("failed:", err)
		return
	}
	for _, r := range rep.Backends[0].Results {
		fmt.Printf("%s measured: %v\n", r.Workload, len(r.Samples) > 0)
	}
	fmt.Println("left behind:", rep.Left())
	// Output:
	// acquire+release measured: true
	// throughput measured: true
	// handover measured: true
	// renew measured: true
	// failover measured: true
	// rebalance-join measured: true
	// rebalance-leave measured: true
	// left behind: <nil>
}
