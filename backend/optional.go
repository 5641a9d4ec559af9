package backend

import (
	"context"
	"time"
)

// TrailingLease is an optional interface a [Lease] implements when its
// Deadline trails the proof of its last renewal by design, however fresh
// that proof: a ZooKeeper lease's Deadline counts a server's answer only
// once a later answer confirms that the ensemble's leader could have
// counted it, and the session's pings move it between renewals. Scheduled
// from such a Deadline, a renewal would always look due. The portable layer
// renews such a lease once per renew interval instead, on a grid shared by
// the leases of the process, so that the leases sharing a session share one
// request, and always before the lease's step-down point.
//
// A wrapper that holds leases of other drivers (such as a migrating
// Backend's) implements it and reports whether any lease it wraps trails.
type TrailingLease interface {
	// DeadlineTrails reports whether the lease's Deadline trails its proof.
	DeadlineTrails() bool
}

// SinceRenewer is an optional interface a [Lease] implements when its
// driver proves the renewals of many leases with one request that they share
// (a ZooKeeper session's): a renewal needs a request sent after it began,
// and one already answered proves every renewal that began before it was
// sent. Renewals run one after another, each beginning after the previous
// one's request was answered, would then cost a request each. The portable
// layer decides the renewals of many leases at one instant and passes it as
// since, so that renewals run one after another on a few goroutines share
// one request all the same.
//
// A wrapper that holds leases of other drivers implements it and forwards
// since to the leases it wraps that implement it.
type SinceRenewer interface {
	// RenewSince renews as [Lease.Renew] does, except that a request sent
	// at or after since proves the renewal, rather than one sent after the
	// call began. since is no later than the call; the caller decided the
	// renewal then. The lease's Deadline rests on the driver's own proof,
	// as after Renew.
	RenewSince(ctx context.Context, since time.Time) error
}

// Warner is an optional interface a [Backend] implements when a valid
// configuration can still be weak (a Redlock over a single or an even number
// of Redis masters). A driver does not log them itself (it logs nothing
// unless its Options.Logger is set); programs such as elect log these
// warnings at start. A wrapper over other Backends implements it and returns
// the warnings of every Backend it wraps.
type Warner interface {
	// Warnings returns advice about the configuration, one sentence each,
	// or nil.
	Warnings() []string
}

// RateLimited is an optional interface a [Backend] implements when its
// client limits the rate of the requests it sends (a Kubernetes client's
// QPS), so that a program holding many elections on it can size them to
// what the client sends instead of finding out by renewals that wait for
// the limiter or miss their lease. A wrapper over other Backends implements
// it and returns the lowest rate of those it wraps.
type RateLimited interface {
	// RequestRate returns the most requests per second the client sends,
	// sustained (bursts aside), or 0 when it sets no limit.
	RequestRate() float64
}

// Forgetter is an optional interface a [Backend] implements when its store
// keeps a record of an election after the election's last lease ended,
// which nothing expires (a Kubernetes Lease object, with its fencing
// counter). Programs that campaign in throw-away elections (elect compare)
// call Forget so that they leave nothing behind. A wrapper over other
// Backends implements it and forgets the election in each of them.
type Forgetter interface {
	// Forget removes what the store keeps of election, provided no lease
	// holds it, and reports whether there was anything to remove. It
	// returns an error naming the holder when a lease holds the election,
	// and removes nothing then. The election's fencing tokens start again
	// from the lowest after Forget: never forget an election whose tokens
	// a resource checks.
	Forget(ctx context.Context, election string) (bool, error)
}

// RequestCounter is an optional interface a [Backend] implements when it
// counts the requests it sends to its store, for programs that report what
// holding elections costs the store where no proxy can read the protocol
// (a Kubernetes client speaks HTTP/2 over TLS). A wrapper over other
// Backends implements it and returns the sum over those it wraps, or false
// when one of them does not count.
type RequestCounter interface {
	// Requests returns the number of requests the Backend has sent to its
	// store since it was made (every read and write, and every watch it
	// started), and true; or false when it does not count them.
	Requests() (int64, bool)
}

// Registry is an optional interface a [Backend] implements when it can keep
// a registry of the candidates of an election, with their priorities, for
// preferred leaders: a leader yields to a live candidate of a higher
// priority, and lower candidates stand aside so that the higher one is
// elected next. The portable layer keeps the rules (who yields, who stands
// aside, for how long); the driver only stores entries, lists them and
// watches them.
//
// An entry's liveness comes from the store, never from the candidate's word:
// it is tied to what keeps a lease alive (an etcd lease, a ZooKeeper
// session) or expires after [Candidate.TTL] unless refreshed (a Redis key).
// A candidate that crashes or is cut off from the store disappears from the
// registry within about a TTL.
//
// The registry must lie where peers that do not know it (etcdctl elect,
// Curator's LeaderLatch, client-go, redsync) would not read an entry as a
// candidate of the election, and entries of elections whose names prefix
// one another ("jobs", "jobs/eu") must not mix. A Backend without Registry
// cannot campaign with a priority: the portable layer refuses one with an
// error naming this interface.
type Registry interface {
	// Register adds c to the registry of c.Election, with c.Priority and
	// the given aside flag, and returns its handle. The entry lives as long
	// as the store keeps it alive (see above) or until it is withdrawn.
	Register(ctx context.Context, c Candidate, aside bool) (Registration, error)

	// Entries lists the live entries of election, in no particular order,
	// as of a read made after the call began (a read that a write made
	// before the call began is visible to).
	Entries(ctx context.Context, election string) ([]Entry, error)

	// WatchEntries calls fn with the live entries of election, then again
	// each time they change, until ctx ends (it returns ctx.Err()) or the
	// watch fails (it returns the error; the caller may call it again).
	// Intermediate states may be skipped, but the last call before a quiet
	// period reports that period's entries. Calls to fn are sequential; fn
	// must not block for long and must not keep the slice.
	WatchEntries(ctx context.Context, election string, fn func([]Entry)) error
}

// Registration is one candidate's entry in a [Registry], from Register until
// Withdraw or its loss. All methods are safe for concurrent use.
type Registration interface {
	// ID is the entry's ID, as [Entry.ID] reports it.
	ID() string

	// SetAside makes one attempt to set the entry's aside flag
	// ([Entry.Aside]). It returns an error wrapping [ErrLost] when the
	// entry is gone (register again).
	SetAside(ctx context.Context, aside bool) error

	// Refresh makes one attempt to keep the entry alive for another
	// [Candidate.TTL], on stores where entries expire on their own (a Redis
	// key); where the store keeps entries alive with the session, it only
	// checks that the entry is still there, or does nothing. It returns an
	// error wrapping [ErrLost] when the entry is gone.
	Refresh(ctx context.Context) error

	// Withdraw removes the entry. Withdrawing an entry already gone returns
	// nil or an error wrapping [ErrLost].
	Withdraw(ctx context.Context) error
}
