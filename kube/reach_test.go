package kube

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// connRefused is the error client-go returns for a request to a port nothing
// listens on.
var connRefused = &url.Error{Op: "Put", URL: "https://127.0.0.1:6443/apis/coordination.k8s.io/v1/namespaces/default/leases/a",
	Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}

// After a request fails without an answer, the Backend sends one request
// per probeEvery and fails the others at once with an error naming the
// apiserver and wrapping the failure; the first request answered, even
// with an error status, ends it. Timeouts and the rate limiter's refusals
// do not: a slow apiserver still gets every request.
func TestReachability(t *testing.T) {
	t.Parallel()
	var r reachability
	t0 := time.Now()
	for _, err := range []error{nil, context.DeadlineExceeded, &LimitError{QPS: 50, Burst: 100}} {
		if err := r.enter(t0); err != nil {
			t.Fatalf("enter while up: %v", err)
		}
		r.exit(t0, err)
	}
	if err := r.enter(t0); err != nil {
		t.Fatalf("after a timeout and a limiter refusal: enter: %v; want the request sent", err)
	}
	r.exit(t0, connRefused)

	err := r.enter(t0.Add(time.Millisecond))
	if err == nil {
		t.Fatal("enter 1 ms after connection connRefused: sent; want it failed at once")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "apiserver unreachable") {
		t.Errorf("error %q: want it to name the unreachable apiserver and wrap ECONNREFUSED", err)
	}
	probe := t0.Add(probeEvery)
	if err := r.enter(probe); err != nil {
		t.Fatalf("enter %v after: %v; want a probe sent", probeEvery, err)
	}
	if err := r.enter(probe.Add(time.Millisecond)); err == nil {
		t.Fatal("a second request 1 ms after the probe went: sent; want one per probeEvery")
	}
	r.exit(probe, context.DeadlineExceeded) // no answer either way: still down
	if err := r.enter(probe.Add(2 * time.Millisecond)); err == nil {
		t.Fatal("after a probe timed out: sent; want the apiserver still taken as unreachable")
	}

	probe = probe.Add(probeEvery)
	if err := r.enter(probe); err != nil {
		t.Fatalf("second probe: %v", err)
	}
	r.exit(probe, apierrors.NewServiceUnavailable("apiserver is starting"))
	if err := r.enter(probe.Add(time.Millisecond)); err != nil {
		t.Fatalf("after an answer (503): %v; want requests sent again", err)
	}
	r.exit(probe, apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, "a", errors.New("changed")))
	if err := r.enter(probe.Add(time.Millisecond)); err != nil {
		t.Fatalf("after a 409: %v; want requests sent", err)
	}
}

// A request the apiserver does not answer says it waited
// Options.RequestTimeout only when that bound ended it: when the caller's
// own deadline came first, the error is the caller's, naming no setting.
func TestBoundedNamesTheBoundThatEndedIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := &Backend{}
		b.cfg.request = time.Second
		hang := func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, &url.Error{Op: "Get", URL: "https://apiserver/leases/a", Err: ctx.Err()}
		}
		short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := bounded(b, short, hang)
		if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "RequestTimeout") {
			t.Errorf("a 200ms ctx ended the request: %v; want the ctx's deadline, not Options.RequestTimeout", err)
		}
		_, err = bounded(b, context.Background(), hang)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 1s (Options.RequestTimeout)") {
			t.Errorf("the bound ended the request: %v; want it to name Options.RequestTimeout", err)
		}
	})
}
