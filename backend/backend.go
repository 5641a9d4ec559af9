// Package backend defines the contract between the portable [elector] layer and
// the drivers that store elections: Redlock, etcd, ZooKeeper, Kubernetes
// Leases and the in-memory reference driver.
//
// Users do not call these interfaces; they construct a driver (for example
// redlock.New or etcd.New) and hand it to elector.New. Driver authors implement
// [Backend] and [Lease], and prove the implementation with
// backend/backendtest.Run.
//
// # Duties of a driver
//
// A driver makes single attempts and reports facts. It does not retry on a
// schedule of its own and never stores a [context.Context] beyond the call
// that received it. A driver logs nothing unless its Options.Logger is set,
// and then only what the portable layer cannot see (why a round inside
// Campaign was lost, what its client library reports about connections),
// never in place of an error it returns. The portable layer owns timing
// (renew schedule, step-down before the local deadline), retries with
// jitter, the callbacks, the logging of terms and metrics.
//
// Every method must return promptly once its ctx is done, with ctx.Err()
// unwrapped (so errors.Is(err, context.Canceled) holds and err == ctx.Err()).
//
// # Errors
//
// Drivers wrap a small closed set of sentinels, which the portable layer and
// the conformance suite classify with [errors.Is]:
//
//   - [ErrLost]: the lease is known to be gone (expired, deleted, taken over,
//     session expired, released). Returned by [Lease.Renew] and, where it is a
//     fact, by [Lease.Release].
//   - [ErrNoLeader]: [Backend.Leader] found no holder.
//   - [ErrClosed]: the Backend was closed; permanent.
//   - [ErrInvalid]: the request can never succeed on this backend (an election
//     name the store cannot represent, a TTL outside its range); permanent.
//
// Any other error (a timeout, a refused connection, a lost quorum) is taken to
// be transient: the portable layer retries it within its own bounds.
//
// # Optional abilities
//
// A driver implements what its store offers beyond [Backend] and [Lease] as
// small optional interfaces, all declared in this package's optional.go;
// callers find them by type assertion and do without when a driver lacks
// one. A wrapper (a Backend over other Backends, such as package migrate's)
// forwards every ability of what it wraps, or documents why not:
// backendtest.RunWrapper checks it. Each entry names who implements the
// ability and who uses it.
//
//   - [Watcher], on a Backend: pushes leader changes. memory, redlock,
//     etcd, zookeeper, kube; migrate forwards it. Used by the Elector's
//     OnLeaderChange, partition groups, migrate (the marker), elect watch.
//   - [BatchReader], on a Backend: reads many holders in few requests.
//     redlock, etcd, kube; migrate forwards it. Used by partition groups.
//   - [TTLFloor], on a Backend: the shortest TTL the store's configuration
//     keeps safe. zookeeper; migrate forwards it. Used by elect status and
//     elect compare.
//   - [Warner], on a Backend: advice about a weak configuration. redlock;
//     migrate forwards it. Used by elect at start.
//   - [TrailingLease], on a Lease: a Deadline that trails its proof.
//     zookeeper; migrate's leases forward it. Used by the portable layer's
//     renew schedule.
//   - [SinceRenewer], on a Lease: renewals that share one request.
//     zookeeper; migrate's leases forward it. Used by the portable layer's
//     renew schedule.
//   - [Unwrapper], on a Backend: the Backends it wraps, through which [As]
//     reaches a driver's own exported API. migrate. Used by elect compare
//     (the kube driver's request count, rate limit and Forget).
//   - [Yielder], on a Lease: the store asks the holder to hand over.
//     kube (Coordinated Leader Election's preferredHolder); migrate's
//     leases forward it. Used by the Elector, which yields as to a
//     candidate of a higher priority.
//   - [Registry], on a Backend, and the [Registration] it returns: the
//     candidates of an election with their priorities. memory, redlock,
//     etcd, zookeeper, kube. Used by the Elector for preferred leaders
//     (Options.Priority). migrate does not forward it: a priority orders
//     the candidates of one store, and a migrating election spans two, so
//     an Elector on it refuses a priority.
package backend

import (
	"context"
	"time"
)

// Backend stores elections. One Backend value may serve many elections and
// many concurrent candidates: two Campaign calls on the same Backend and the
// same election are two distinct candidates that exclude each other exactly
// as candidates in two processes would.
//
// All methods are safe for concurrent use.
type Backend interface {
	// Campaign blocks until the candidate holds the election c.Election, then
	// returns its lease. It returns ctx.Err() when ctx ends first, and then
	// leaves nothing behind that could delay other candidates (no queued key,
	// no znode, no lock fragment on a minority of nodes).
	//
	// While it waits, a driver watches or sleeps on whatever its store offers
	// (a predecessor's deletion, a release notification, the holder's remaining
	// TTL); it must not poll blindly. A transient failure of the store is
	// returned as an error rather than retried; the caller decides when to try
	// again. The returned lease's Deadline must lie in the future.
	Campaign(ctx context.Context, c Candidate) (Lease, error)

	// Leader reports the current holder of election, or an error wrapping
	// [ErrNoLeader] when there is none. It reflects the store, not this
	// process's view: a holder in another process is reported too.
	Leader(ctx context.Context, election string) (Holder, error)

	// Close releases the Backend's resources. Leases obtained from it are
	// finished: their Lost channels close and further calls on them return
	// [ErrLost] or [ErrClosed]. Whether the store frees them at once (a
	// closed session) or lets them expire is up to the driver, and documented
	// by it. Campaign and Leader return [ErrClosed] afterwards. Close is
	// idempotent.
	Close() error
}

// Lease is one candidate's hold on one election, from the Campaign that won
// it until it is released, lost, or expires.
//
// All methods are safe for concurrent use.
type Lease interface {
	// Token is the fencing token of this lease. Tokens strictly increase
	// across the successive leases of one election; a protected resource that
	// refuses tokens lower than the highest it has seen is safe from a stale
	// leader. It is never 0, which means "no token". A driver whose token
	// needs assumptions (Redlock) states them.
	Token() uint64

	// Deadline is the latest instant, on this process's monotonic clock, at
	// which the lease may still be held at the store, computed conservatively
	// from when the successful acquire or renew request was sent, the TTL the
	// store granted, and the driver's clock-drift bound. Past it another
	// candidate may hold the election. It never moves backwards.
	Deadline() time.Time

	// Renew makes one attempt to extend the lease by its TTL. On success the
	// Deadline moves forward. It returns an error wrapping [ErrLost] when the
	// lease is known to be gone (and then Lost is closed), and any other error
	// when the outcome is unknown (the lease may still be held until its
	// Deadline). It never re-creates a lease that has lapsed.
	Renew(ctx context.Context) error

	// Lost returns a channel closed when the driver learns the lease is gone:
	// deleted or taken over at the store, a session expired, the Backend
	// closed, or the lease released. A driver need not close it merely because
	// Deadline has passed; the portable layer watches the Deadline itself.
	Lost() <-chan struct{}

	// Release gives the election up so that a waiting candidate is elected at
	// once. It removes only this lease, never a successor's. On success, Lost
	// is closed and Renew returns [ErrLost]. On failure (the store did not
	// answer in time, or ctx ended first) the lease is given up all the same,
	// since its holder has stopped: Lost is closed, Renew returns [ErrLost],
	// and nothing renews it any more, not even the renewals it shared with
	// other leases (an etcd lease, a ZooKeeper session). The election stays
	// held until the driver removes the lease in the background, once the
	// store answers, or the lease lapses, by its Deadline when the store
	// does not answer. Release may be called again. Releasing a lease that is
	// already gone returns nil or an error wrapping [ErrLost]; after the
	// Backend's Close, an error wrapping [ErrClosed].
	Release(ctx context.Context) error
}

// MinTTL is the shortest [Candidate.TTL] any driver accepts; drivers may
// require more. A shorter lease would end within the scheduling jitter of
// the process holding it.
const MinTTL = 10 * time.Millisecond

// Candidate describes one campaign.
type Candidate struct {
	// Election names the election; see [ValidateElection] for the portable
	// rules. Drivers may refuse further names with [ErrInvalid].
	Election string
	// Identity is the candidate's human-readable identity, reported by
	// [Backend.Leader]. Identities need not be unique: drivers tell leases
	// apart by values of their own.
	Identity string
	// TTL is how long the lease lives without a renewal: the lease gets
	// this TTL on every driver, rounded up only to the store's granularity
	// (etcd: whole seconds), and Deadline reflects it. A TTL below [MinTTL],
	// or one the store cannot grant (outside a ZooKeeper ensemble's session
	// timeout range, under etcd's minimum lease TTL), makes Campaign return
	// an error wrapping [ErrInvalid] that names the range the store accepts.
	TTL time.Duration
	// Priority is the candidate's priority for preferred leaders (higher
	// is preferred), published through a [Registry]. Campaign ignores it;
	// zero means the candidate takes no part in preferences.
	Priority int
}

// Holder describes the holder of an election as the store reports it.
type Holder struct {
	// Election is the election's name.
	Election string
	// Identity is the holder's Candidate.Identity.
	Identity string
	// Token is the holder's fencing token.
	Token uint64
	// TTL is the time the holder's lease has left at the store when it was
	// read, or 0 when the driver cannot tell cheaply.
	TTL time.Duration
}

// IsZero reports whether h is the zero Holder, which [Watcher] uses for "no
// leader".
func (h Holder) IsZero() bool { return h == Holder{} }
