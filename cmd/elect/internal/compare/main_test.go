package compare_test

import (
	"testing"

	"go.uber.org/goleak"
)

// client-go shares TLS transports between clients of one configuration and
// keeps their HTTP/2 connections open after the clients are dropped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}
