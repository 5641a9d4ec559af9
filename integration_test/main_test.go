package integration_test

import (
	"context"
	"testing"

	"github.com/leaderkit/elector/integration_test/internal/toxileak"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietRedisLogger drops go-redis's own log lines (dial failures while fault
// tests hold nodes down).
type quietRedisLogger struct{}

func (quietRedisLogger) Printf(context.Context, string, ...any) {}

// Tests run serially unless they call t.Parallel (then up to eight at once
// unless -parallel says otherwise). Those that do
// (TestCloseUnderTerm, TestEtcdTTLBelowServerMinimum and the two
// *PartitionedLeaderStepsDown tests) use election names of their own (the
// *Name helpers add random digits), break only connections of their own (an
// in-process toxiproxy in front of a shared server changes nothing for other
// clients), and have no bound that a host busy with other tests misses
// (TestCloseUnderTerm's 5 s terms, the partitioned leaders' 12 s with a
// 5.5 s margin; TestEtcdTTLBelowServerMinimum runs an etcd of its own and
// checks the Deadline against the call's own send and return). The others
// stay serial, and so run before the parallel ones: the fault tests that kill,
// pause or restart a shared server (TestEtcdPausedRaftLeaderNoEarlyRevoke,
// TestEtcdRaftLeaderKilled, TestPartitionRedlockQuorumLoss,
// TestZooKeeperKillLeaderServer); the tests that count server-wide requests
// (TestRoundTrips, TestScale); and the tests whose bounds a host shared with
// other tests misses: 2 s terms, or Redis requests bounded at 250-500 ms
// (the TestMigrate* tests, TestRedisMarker, TestPartitionBackends,
// TestRedlockRedsyncInterop).
func TestMain(m *testing.M) {
	testenv.DefaultParallel(8)
	redis.SetLogger(quietRedisLogger{})
	goleak.VerifyTestMain(m, append(toxileak.Ignore,
		// After a failed dial go-redis probes the node in the background once
		// a second until the pool is closed; it ends within a second.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	)...)
}
