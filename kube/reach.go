package kube

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// probeEvery is how often a Backend that lost its connection to the
// apiserver lets a request through to find out whether it is back.
const probeEvery = 50 * time.Millisecond

// reachability remembers whether the apiserver answers. After a request
// fails without an answer (connection refused or reset, the connection
// lost), the Backend sends one request per probeEvery and fails the others
// at once, before they take a token of the rate limiter: an apiserver
// restart then costs no renewal a wait in the limiter behind the retries
// of every other held Lease, and the apiserver that comes back is not met
// by all of them at once. The first request that gets an answer, of any
// kind, ends it.
type reachability struct {
	mu    sync.Mutex
	down  bool
	since time.Time // when it went down
	err   error     // the last failure without an answer
	next  time.Time // when the next probe may go
}

// enter reports whether a request may be sent now, and if not the error
// to fail it with.
func (r *reachability) enter(now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.down || !now.Before(r.next) {
		r.next = now.Add(probeEvery)
		return nil
	}
	return &unreachableError{since: r.since, err: r.err}
}

// exit records the outcome of a request enter let through.
func (r *reachability) exit(now time.Time, err error) {
	unanswered := err != nil && noAnswer(err)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case unanswered && !r.down:
		r.down, r.since, r.err = true, now, err
		r.next = now.Add(probeEvery)
	case unanswered:
		r.err = err
	case err == nil || answered(err):
		r.down, r.err = false, nil
	}
}

// noAnswer reports whether err says the apiserver could not be reached.
func noAnswer(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || utilnet.IsProbableEOF(err)
}

// answered reports whether err is the apiserver's answer (a status it sent)
// rather than a failure before one, such as a timeout or the rate limiter.
func answered(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}

// unreachableError fails a request the Backend did not send because the
// apiserver did not answer the last ones. It is transient, and wraps the
// last failure without an answer.
type unreachableError struct {
	since time.Time // when a request first failed without an answer
	err   error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("apiserver unreachable for %v, not sent (one request is, every %v, until one is answered): %v",
		time.Since(e.since).Round(time.Millisecond), probeEvery, e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }
