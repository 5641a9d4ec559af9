package kube

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// klog, which client-go logs through, flushes its buffers from a
	// goroutine it starts at init and never stops.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}
