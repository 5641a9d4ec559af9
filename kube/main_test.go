package kube

import (
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/klog/v2"
)

func TestMain(m *testing.M) {
	// client-go's leaderelection, the peer in the interop tests and the
	// benchmarks, logs every attempt through klog to stderr, which would
	// break the lines go test -bench prints.
	klog.SetLogger(logr.Discard())
	// klog flushes its buffers from a goroutine it starts at init and never
	// stops.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}
