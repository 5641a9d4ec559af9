package compare_test

import (
	"testing"

	"go.uber.org/goleak"
)

// client-go shares TLS transports between clients of one configuration and
// keeps their HTTP/2 connections open after the clients are dropped.
//
// Two tests call t.Parallel, and Go runs them together after every other
// test: TestRunLeavesNoRedisKeys (Redis and etcd; it compares the count of
// Redis keys without expiry before and after each run, so no other test
// may write Redis keys beside it) and TestCompareWithinRateLimit (the
// apiserver only). A new parallel test must write no Redis key.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}
