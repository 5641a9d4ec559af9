package backend

import "errors"

// The closed set of errors drivers wrap. See the package documentation for
// when each applies.
var (
	// ErrLost means a lease is gone: expired, deleted, taken over, released,
	// or its session ended. Returned by [Lease.Renew] (and possibly
	// [Lease.Release]).
	ErrLost = errors.New("lease lost")

	// ErrNoLeader means an election has no holder. Returned by
	// [Backend.Leader].
	ErrNoLeader = errors.New("no leader")

	// ErrClosed means the Backend was closed. It is permanent.
	ErrClosed = errors.New("backend closed")

	// ErrInvalid means a request can never succeed on this backend, such as
	// an election name the store cannot represent or a TTL outside its range.
	// It is permanent.
	ErrInvalid = errors.New("invalid request")
)

// IsPermanent reports whether err will recur however often the request is
// retried: it wraps [ErrClosed] or [ErrInvalid].
func IsPermanent(err error) bool {
	return errors.Is(err, ErrClosed) || errors.Is(err, ErrInvalid)
}
