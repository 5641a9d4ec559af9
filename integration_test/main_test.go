package integration_test

import (
	"context"
	"testing"

	"github.com/leaderkit/elector/integration_test/internal/toxileak"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietRedisLogger drops go-redis's own log lines (dial failures while fault
// tests hold nodes down).
type quietRedisLogger struct{}

func (quietRedisLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedisLogger{})
	goleak.VerifyTestMain(m, append(toxileak.Ignore,
		// After a failed dial go-redis probes the node in the background once
		// a second until the pool is closed; it ends within a second.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	)...)
}
