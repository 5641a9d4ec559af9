package backendurl_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Tests open Redis URLs naming hosts that do not resolve. go-redis
		// dials in a goroutine of its own pool that outlives the closed
		// client until the name lookup fails, which takes as long as the
		// machine's resolver takes to say "no such host".
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).queuedNewConn.func2"),
		goleak.IgnoreAnyFunction("net.(*Resolver).goLookupIPCNAMEOrder.func3.1"),
	)
}
