package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	coordinationv1beta1client "k8s.io/client-go/kubernetes/typed/coordination/v1beta1"
	"k8s.io/client-go/rest"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/orphans"
)

// Backend runs elections on Lease objects of one namespace through a
// client the caller configured (server, credentials, rate limits). It
// implements [backend.Backend], [backend.Watcher], [backend.BatchReader],
// [backend.Warner] and [backend.Registry]. Create it with [New].
type Backend struct {
	leases coordinationv1client.LeaseInterface
	ns     string
	cfg    config
	rate   float64 // the client's rate limit (RequestRate)

	requests atomic.Int64 // requests sent (Requests)

	done chan struct{} // closed by Close
	bg   sync.WaitGroup

	seen  seenRecords    // when Leader first read each Lease's record
	clock *serverClock   // the apiserver's clock, for readers
	rest  rest.Interface // the client's REST client; nil when it does not expose one

	reach reachability // whether the apiserver answers; see bounded

	// cands reaches the namespace's LeaseCandidates (the registry of
	// candidates); nil when the client does not expose its REST client.
	cands coordinationv1beta1client.LeaseCandidateInterface

	nsExists atomic.Bool  // the namespace was seen to exist (checkNamespace)
	listed   atomic.Int64 // the Leases of the namespace at Leaders' last List; 0 before it

	mu     sync.Mutex
	closed bool
	held   map[string][]*lease        // won and not yet finished, by Lease name
	regs   map[*registration]struct{} // registered and not withdrawn
	// orphans holds the LeaseCandidates failed Registers may have created
	// and could not delete (see Register).
	orphans orphans.Set[*registration]
	// caching: the watch of the namespace's Leases runs (see leaseCache),
	// from the first Campaign, Watch or lease won until Close.
	caching bool
	cache   *leaseCache

	limit    *RateLimiter  // the client's, when it is one; nil otherwise
	pending  float64       // renewals per second of campaigns admitted and not yet won
	room     chan struct{} // closed and replaced when held renewals shrink
	overload string        // the warning of the first campaign held back; "" before
}

// seenRecords remembers, per Lease name, the latest holder record Leader
// read and when it first read it, so that Leader judges expiry as a waiting
// candidate does. A Lease is forgotten when it names no holder or is gone.
type seenRecords struct {
	mu sync.Mutex
	m  map[string]seenRecord
}

type seenRecord struct {
	key specKey
	at  time.Time
}

// first returns when the record of l was first read: now, unless an
// earlier read found the same record.
func (s *seenRecords) first(name string, l *coordinationv1.Lease, now time.Time) time.Time {
	k := keyOf(l)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.m[name]; ok && r.key == k {
		return r.at
	}
	if s.m == nil {
		s.m = make(map[string]seenRecord)
	}
	s.m[name] = seenRecord{key: k, at: now}
	return now
}

func (s *seenRecords) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, name)
}

var (
	_ backend.Backend = (*Backend)(nil)
	_ backend.Watcher = (*Backend)(nil)
)

// New returns a Backend storing elections in the Leases of namespace
// through client, typically clientset.CoordinationV1() of a
// k8s.io/client-go clientset. opts may be nil for the defaults.
//
// The clientset's rest.Config carries client-go's client-side rate limit
// (QPS 5, burst 10 by default), which every request of the Backend passes;
// a process holding many elections or handing them over often should raise
// it, and set its RateLimiter to a [RateLimiter] so that renewals go first
// (see the package documentation, # Timing).
func New(client coordinationv1client.LeasesGetter, namespace string, opts *Options) (*Backend, error) {
	if client == nil {
		return nil, fmt.Errorf("kube: %w: client is nil", backend.ErrInvalid)
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("kube: %w: namespace %q: %s", backend.ErrInvalid, namespace, errs[0])
	}
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	b := &Backend{
		leases: client.Leases(namespace),
		ns:     namespace,
		cfg:    cfg,
		rate:   clientRate(client),
		limit:  clientLimiter(client),
		clock:  newServerClock(client),
		rest:   restOf(client),
		cands:  candidateClient(restOf(client), namespace, candidatesPath),
		done:   make(chan struct{}),
		held:   make(map[string][]*lease),
		room:   make(chan struct{}),
	}
	b.cache = newLeaseCache(b)
	return b, nil
}

// Namespace returns the namespace of the Backend's Leases.
func (b *Backend) Namespace() string { return b.ns }

// open validates election for op and returns its Lease name, or an error
// wrapping [backend.ErrInvalid], or [backend.ErrClosed] once Close was
// called.
func (b *Backend) open(op, election string) (string, error) {
	name, err := leaseName(election)
	if err != nil {
		return "", fmt.Errorf("kube: %s: %w", op, err)
	}
	if err := b.usable(op, election); err != nil {
		return "", err
	}
	return name, nil
}

// usable returns an error wrapping [backend.ErrClosed] once Close was called.
func (b *Backend) usable(op, election string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("kube: %s %q: %w", op, election, backend.ErrClosed)
	}
	return nil
}

// Leader reports the holder the election's Lease names: its identity, its
// token (the Lease's leaseTransitions) and the time left until it expires.
// A Lease that names no holder (released, or never held), whose holder has
// expired, or that does not exist is no leader: a holder that stopped
// without releasing is reported gone about its duration after its last
// write, as a key with a TTL is by the other drivers, although the Lease
// names it until another candidate takes it over (as kubectl shows it).
//
// A holder has expired when either judgment says so (see the package
// documentation, # Readers): on the apiserver's clock, its last write is
// more than its leaseDurationSeconds plus two seconds of margin older than
// the read; or, as a waiting candidate judges it, its duration has passed
// since this Backend first read its latest record. The first judgment
// needs one more request, GET /version, at most every 10 s.
func (b *Backend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	name, err := leaseName(election)
	if err != nil {
		return backend.Holder{}, err
	}
	if err := b.usable("leader", election); err != nil {
		return backend.Holder{}, err
	}
	sent := time.Now()
	l, err := b.get(ctx, name)
	switch {
	case ctx.Err() != nil:
		return backend.Holder{}, ctx.Err()
	case apierrors.IsNotFound(err):
		if err := b.checkNamespace(ctx); err != nil {
			return backend.Holder{}, fmt.Errorf("kube: leader %q: %w", election, err)
		}
		l = nil
	case err != nil:
		return backend.Holder{}, fmt.Errorf("kube: leader %q: %w", election, err)
	}
	return b.holderAt(election, name, l, sent, b.judge(ctx, l))
}

// holderAt reports the holder of election from its Lease l (nil: there is
// none), read by a request sent at sent, as Leader does; v is the verdict
// of the apiserver's clock on l.
func (b *Backend) holderAt(election, name string, l *coordinationv1.Lease, sent time.Time, v verdict) (backend.Holder, error) {
	h := holder(election, l)
	if h.IsZero() {
		b.seen.forget(name)
		return backend.Holder{}, fmt.Errorf("kube: leader %q: %w", election, backend.ErrNoLeader)
	}
	now := time.Now()
	exp := b.seen.first(name, l, now).Add(durationOf(l))
	if !now.Before(exp) {
		return backend.Holder{}, fmt.Errorf("kube: leader %q: %w: the Lease of %q expired", election, backend.ErrNoLeader, h.Identity)
	}
	if v.on(l) {
		// Judged at the read's send time: the holder may have renewed
		// after the read, unseen.
		if !sent.Before(v.exp) {
			return backend.Holder{}, fmt.Errorf("kube: leader %q: %w: the Lease of %q expired (its last write is older than its duration by the apiserver's clock)",
				election, backend.ErrNoLeader, h.Identity)
		}
		if v.exp.Before(exp) {
			exp = v.exp
		}
	}
	h.TTL = max(exp.Sub(now), time.Millisecond)
	return h, nil
}

// Close finishes every lease of the Backend (their Lost channels close),
// makes waiting Campaigns and Watches return, releases the Leases the
// Backend holds, so successors are elected at once, and withdraws its
// registry entries (deletes their LeaseCandidates). Releasing and
// withdrawing are bounded by [Options.CleanupTimeout]; a Lease it cannot
// release expires after its holder's duration, an entry after its TTL.
// Close does not close the client. It is idempotent.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.bg.Wait()
		return nil
	}
	b.closed = true
	close(b.done)
	for _, ls := range b.held {
		for _, l := range ls {
			l.finish()
			b.bg.Go(l.clear) // under b.mu: a concurrent Close waits for these
		}
	}
	b.held = nil
	b.withdrawAllLocked()
	b.mu.Unlock()
	b.bg.Wait()
	return nil
}

// forget removes a finished lease from the held set.
func (b *Backend) forget(l *lease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.held[l.name])
	ls := slices.DeleteFunc(b.held[l.name], func(x *lease) bool { return x == l })
	if len(ls) == 0 {
		delete(b.held, l.name)
	} else {
		b.held[l.name] = ls
	}
	if len(ls) < n {
		b.roomMade()
	}
}

// keep adds a won lease to the held set, or reports false when the Backend
// was closed meanwhile.
func (b *Backend) keep(l *lease) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.held[l.name] = append(b.held[l.name], l)
	if !b.caching {
		b.caching = true
		b.bg.Go(b.cache.run)
	}
	return true
}

// bounded runs one request with ctx bounded by Options.RequestTimeout,
// unless the apiserver did not answer the last ones (see reachability).
func bounded[T any](b *Backend, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	if err := b.reach.enter(time.Now()); err != nil {
		var zero T
		return zero, err
	}
	rctx, cancel := context.WithTimeout(ctx, b.cfg.request)
	defer cancel()
	b.requests.Add(1)
	v, err := f(rctx)
	b.reach.exit(time.Now(), err)
	var limited *LimitError
	switch {
	case err == nil, errors.As(err, &limited), ctx.Err() != nil:
		// The caller's own ctx ended the request: its error, as is.
	case strings.Contains(err.Error(), "client rate limiter"):
		// client-go's own limiter, which names no setting.
		err = fmt.Errorf("the client's rate limit (qps %g) held the request until its deadline: %w", b.rate, err)
	case errors.Is(rctx.Err(), context.DeadlineExceeded) && !apierrors.IsConflict(err):
		err = fmt.Errorf("no answer within %v (Options.RequestTimeout): %w", b.cfg.request, err)
	}
	return v, err
}

func (b *Backend) get(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	return bounded(b, ctx, func(ctx context.Context) (*coordinationv1.Lease, error) {
		return b.leases.Get(ctx, name, metav1.GetOptions{})
	})
}

func (b *Backend) create(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	got, err := bounded(b, ctx, func(ctx context.Context) (*coordinationv1.Lease, error) {
		return b.leases.Create(ctx, l, metav1.CreateOptions{})
	})
	if err == nil {
		b.cache.wrote(got)
	}
	return got, err
}

func (b *Backend) update(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	got, err := bounded(b, ctx, func(ctx context.Context) (*coordinationv1.Lease, error) {
		return b.leases.Update(ctx, l, metav1.UpdateOptions{})
	})
	if err == nil {
		b.cache.wrote(got)
	}
	return got, err
}

// permanent wraps err in [backend.ErrInvalid] when the apiserver refused the
// request as one it will never accept: a Lease it will not store. Refused
// credentials and missing rights stay transient, since they can be mended
// while the process runs (a rotated token, an RBAC grant).
func permanent(err error) error {
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return fmt.Errorf("%w: %w", backend.ErrInvalid, err)
	}
	return err
}
