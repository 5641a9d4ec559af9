package kube

import (
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/klog/v2"

	"github.com/leaderkit/elector/internal/testenv"
)

// TestMain runs the tests. Most call t.Parallel first, and so run, up to
// eight at once unless -parallel says otherwise, after the others have
// ended: each works on Leases, elections and LeaseCandidates of its own
// (testName derives their names from t.Name() and a random suffix), cuts
// or stalls only proxies of its own, changes no environment or package
// state, and its bounds leave seconds for a loaded machine: these tests
// wait on leases and timers, not on the CPU. The tests that run alone, one
// after another, are those that fault the shared servers (restart the
// apiserver, compact etcd), keep the apiserver busy
// (TestOverloadKeepsCapacity, the conformance suite, new Backends listing
// the namespace several times a second), need requests answered within a
// second or two to pass, or set environment variables; each says why.
func TestMain(m *testing.M) {
	testenv.DefaultParallel(8)
	// client-go's leaderelection, the peer in the interop tests and the
	// benchmarks, logs every attempt through klog to stderr, which would
	// break the lines go test -bench prints.
	klog.SetLogger(logr.Discard())
	// klog flushes its buffers from a goroutine it starts at init and never
	// stops.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}
