package redlock

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/leaderkit/elector/internal/testenv"
)

// quietLogger drops go-redis's own log lines (dial failures while the fault
// tests hold nodes down), which would bury the test output.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Most tests call t.Parallel, and up to eight of them run at once unless
// -parallel says otherwise: each makes its own Backends and clients on
// election names of its own (name), cuts nodes off only through a hook on
// its own clients, and waits with bounds sized for a loaded host. Those
// that campaign on the five masters count a restarted node at once
// (Options.RestartDelay 1 ms): they run after every serial test, and so
// after the restarts in the fault tests' cleanups, which they need not wait
// out. These stay serial, and so run before all the parallel ones:
//
//   - the fault tests (fault_test.go, TestMinorityRestartAfterHandOver and
//     TestRestartDelayOff) kill, pause or restart the shared nodes;
//   - TestRenewalsLeaveNoGoroutinePerLease counts the process's goroutines;
//   - TestConformance runs its rules at once already, with
//     bounds of TTL/2 (2.5 s) for a hand-over and 1 s for a prompt return;
//   - TestURLRedisTLS needs its refusals' handshakes done within 1 s
//     requests, TestFirstRoundConnects its connections made within 600 ms
//     of slack, and TestAuth a reply within the default 100 ms
//     RequestTimeout;
//   - TestForeignLockExcludes, TestFencingWriteBack and
//     TestUnmarkKeepsCounter need a key to outlast several requests on a
//     PTTL of 2 s or less (they take well under a second: parallel, they
//     would save nothing).
func TestMain(m *testing.M) {
	testenv.DefaultParallel(8)
	redis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m,
		// After a failed dial go-redis probes the node in the background
		// once a second until the pool is closed, and notices the close
		// only after its sleep: it ends within a second of the test.
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	)
}
