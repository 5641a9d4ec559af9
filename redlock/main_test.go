package redlock

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietLogger drops go-redis's own log lines (dial failures while the fault
// tests hold nodes down), which would bury the test output.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m,
		// After a failed dial go-redis probes the node in the background
		// once a second until the pool is closed, and notices the close
		// only after its sleep: it ends within a second of the test.
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	)
}
