//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leaderkit/elector/backend"
)

// The rule every subcommand follows for what a backend says (docs/elect.md,
// section Exit codes): what the user must change is a usage error, exit 2 —
// a request the backend refuses as invalid (a TTL outside its range, an
// election name it cannot store), or credentials or permissions the server
// refuses; a backend that cannot be reached or answered nothing in time is
// exit 3.

// refusedAccess reports whether err says that the server refused the
// client's credentials or permissions: retrying cannot help until the user
// changes them. It knows each store's own words: a Kubernetes 401 or 403,
// etcd's authentication and permission errors, ZooKeeper's NOAUTH and
// AUTHFAILED, and Redis's WRONGPASS, NOAUTH and NOPERM replies (which the
// redlock driver reports per node, as text).
func refusedAccess(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		return true
	}
	for _, e := range []error{zk.ErrNoAuth, zk.ErrAuthFailed,
		rpctypes.ErrPermissionDenied, rpctypes.ErrAuthFailed, rpctypes.ErrInvalidAuthToken,
		rpctypes.ErrGRPCPermissionDenied, rpctypes.ErrGRPCAuthFailed, rpctypes.ErrGRPCInvalidAuthToken} {
		if errors.Is(err, e) {
			return true
		}
	}
	msg := err.Error()
	for _, reply := range []string{"WRONGPASS ", "NOAUTH ", "NOPERM "} {
		if strings.Contains(msg, reply) {
			return true
		}
	}
	return false
}

// usageError reports whether err, from a request to the backend, is one
// the user must fix: the request is invalid for this backend, or the
// server refused the credentials or permissions.
func usageError(err error) bool {
	return errors.Is(err, backend.ErrInvalid) || refusedAccess(err)
}

// requestFailed turns the error of a request a subcommand (named by sub)
// made to the backend into its exit: 2 when the user must change
// something (see usageError), else 3. timeout, when positive, is the
// subcommand's --timeout, named when the request got no answer within it,
// with what a connection to each server of rawURL says (see diagnose).
func requestFailed(ctx context.Context, sub string, err error, timeout time.Duration, rawURL string) error {
	switch {
	case refusedAccess(err):
		return exitf(exitUsage, "%s: the backend refuses elect's credentials or permissions; fix them in the backend URL (or the kubeconfig, or the Role of a service account): %v", sub, err)
	case errors.Is(err, backend.ErrInvalid):
		return exitf(exitUsage, "%s: %v", sub, err)
	case timeout > 0 && errors.Is(err, context.DeadlineExceeded):
		if why := diagnose(context.WithoutCancel(ctx), rawURL); why != "" {
			return exitf(exitBackend, "%s: no answer from the backend within --timeout %v: %v; a connection to each server says: %s", sub, timeout, err, why)
		}
		return exitf(exitBackend, "%s: no answer from the backend within --timeout %v: %v", sub, timeout, err)
	}
	return exitf(exitBackend, "%s: %v", sub, err)
}

// checkTimeout refuses a --timeout that leaves no time for the backend.
func checkTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("--timeout is %v; want a positive duration such as 5s", d)
	}
	return nil
}
