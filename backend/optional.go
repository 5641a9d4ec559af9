package backend

import (
	"context"
	"reflect"
	"time"
)

// This file declares every optional ability of a driver; the package
// documentation indexes them (# Optional abilities), and
// backendtest.RunWrapper checks that a wrapper forwards each of them.

// Watcher is an optional interface a [Backend] implements when its store can
// push leader changes (an etcd watch, ZooKeeper watches, Redis keyspace
// notifications) instead of being polled.
//
// A wrapper over other Backends implements it and watches those it needs
// for its Leader; it reads one that has no Watcher at intervals instead.
type Watcher interface {
	// Watch calls fn with the current holder of election (the zero Holder when
	// there is none), then again each time the holder changes, until ctx ends
	// (it returns ctx.Err()) or the watch fails (it returns the error; the
	// caller may call Watch again). Intermediate holders may be skipped, but
	// the last call before a quiet period reports the holder of that period.
	// Calls to fn are sequential; fn must not block for long.
	Watch(ctx context.Context, election string, fn func(Holder)) error
}

// BatchReader is an optional interface a [Backend] implements when it reads
// the holders of many elections in fewer requests than one
// [Backend.Leader] call each (a Redlock node answers one script for all of
// them). Callers that read many elections at once, such as a partition
// group reading its member list and its partitions' holders, use it when
// the Backend has it.
//
// A wrapper over other Backends implements it and reads each Backend it
// needs in one batch, one election at a time from one that has no
// BatchReader.
type BatchReader interface {
	// Leaders reports, for elections[i], what Leader(ctx, elections[i])
	// would: holders[i], or errs[i] (wrapping [ErrNoLeader] when there is
	// no holder). Both slices have len(elections) entries. When ctx ends
	// first, every errs[i] not yet known is ctx.Err().
	Leaders(ctx context.Context, elections []string) (holders []Holder, errs []error)
}

// TTLFloor is an optional interface a [Backend] implements when its store's
// own configuration sets the shortest TTL it can keep safe. The zookeeper
// driver has it: a follower answers its clients for up to syncLimit ×
// tickTime after its leader last counted them, so a lease's Deadline must
// trail its answers by that long, and Campaign refuses a TTL that leaves no
// time to lead. Tools report it (elect status, elect compare), and a caller
// can check its TTL before it campaigns.
//
// A wrapper over other Backends implements it and returns the highest floor
// of those it campaigns on, or an error wrapping [errors.ErrUnsupported]
// when none of them has one.
type TTLFloor interface {
	// MinTTL returns the shortest Candidate.TTL a Campaign accepts, and the
	// store configuration it follows from, in a few words for messages
	// (for example "syncLimit 5 × tickTime 2s, conf of zk1:2181"). It
	// may ask the store, and returns ctx's error if ctx ends first.
	MinTTL(ctx context.Context) (time.Duration, string, error)
}

// Warner is an optional interface a [Backend] implements when a valid
// configuration can still be weak (a Redlock over a single or an even number
// of Redis masters). A driver does not log them itself (it logs nothing
// unless its Options.Logger is set); programs such as elect log these
// warnings at start.
//
// A wrapper over other Backends implements it and returns the warnings of
// every Backend it wraps.
type Warner interface {
	// Warnings returns advice about the configuration, one sentence each,
	// or nil.
	Warnings() []string
}

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
// A wrapper that holds leases of other drivers implements it on its leases
// and reports whether any lease it wraps trails.
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
// A wrapper that holds leases of other drivers implements it on its leases
// and forwards since to the leases it wraps that implement it.
type SinceRenewer interface {
	// RenewSince renews as [Lease.Renew] does, except that a request sent
	// at or after since proves the renewal, rather than one sent after the
	// call began. since is no later than the call; the caller decided the
	// renewal then. The lease's Deadline rests on the driver's own proof,
	// as after Renew.
	RenewSince(ctx context.Context, since time.Time) error
}

// Unwrapper is an optional interface a [Backend] implements when it wraps
// other Backends (a migrating Backend wraps an old and a new one). It is
// the one way to reach what a wrapped driver offers beyond this contract,
// on the driver's own exported API (the kube driver's request count and
// rate limit, for example): [As] finds a driver through it, as
// [errors.As] finds an error through Unwrap.
type Unwrapper interface {
	// Unwrap returns the Backends this one wraps, in a fixed order; nil
	// entries are skipped.
	Unwrap() []Backend
}

// As reports whether b, or a Backend that b wraps (through [Unwrapper],
// depth first, b first), is assignable to the type that target points to,
// and if so sets *target to the first such Backend. It panics if target is
// not a non-nil pointer, as errors.As does.
//
// As is the escape hatch to a driver's own API, for programs that measure
// or administer a store:
//
//	var rate interface{ RequestRate() float64 }
//	if backend.As(b, &rate) { ... }
func As(b Backend, target any) bool {
	v := reflect.ValueOf(target)
	if target == nil || v.Kind() != reflect.Pointer || v.IsNil() {
		panic("backend: As: target must be a non-nil pointer")
	}
	want := v.Type().Elem()
	var found bool
	Walk(b, func(b Backend) bool {
		if reflect.TypeOf(b).AssignableTo(want) {
			v.Elem().Set(reflect.ValueOf(b))
			found = true
		}
		return !found
	})
	return found
}

// Walk calls fn with b, then with each Backend b wraps ([Unwrapper]),
// depth first, until fn returns false. Nil Backends are skipped.
func Walk(b Backend, fn func(Backend) bool) {
	walk(b, fn)
}

func walk(b Backend, fn func(Backend) bool) bool {
	if b == nil || (reflect.ValueOf(b).Kind() == reflect.Pointer && reflect.ValueOf(b).IsNil()) {
		return true
	}
	if !fn(b) {
		return false
	}
	if u, ok := b.(Unwrapper); ok {
		for _, inner := range u.Unwrap() {
			if !walk(inner, fn) {
				return false
			}
		}
	}
	return true
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
	// as the store keeps it alive (see above) or until it is withdrawn. A
	// Register that fails removes what it may have written; what it cannot
	// remove must not be listed beside the entry of the next Register of
	// the same election and identity, and Close removes it.
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

// Yielder is an optional interface a [Lease] implements when its store can
// ask the holder to hand over: the kube driver's, when Kubernetes'
// Coordinated Leader Election (KEP-4355) names another identity in the
// spec.preferredHolder of the holder's Lease. The portable layer then ends
// the term as it ends one for a candidate of a higher priority: the
// leader's work stops, the lease is renewed until OnElected has returned,
// then released, so the preferred holder is elected at once rather than
// after the lease expires.
type Yielder interface {
	// Yield returns a channel closed once the store asks the holder to
	// yield the lease.
	Yield() <-chan struct{}
}
