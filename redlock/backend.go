package redlock

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/orphans"
)

// Backend is a [backend.Backend] over N independent Redis masters, running
// the Redlock algorithm with a quorum of N/2+1. See the package
// documentation for the algorithm, its defaults and its safety assumptions.
//
// A Backend is safe for concurrent use. One Backend serves any number of
// elections and candidates.
type Backend struct {
	clients  []redis.UniversalClient
	cfg      config
	quorum   int
	ctxBound bool // every client is known to honour ctx deadlines on socket I/O
	notify   *notifier
	restarts *restarts  // nil with Options.NoRestartDelay
	batch    *batcher   // coalesces renewals; nil unless every client is one server
	gate     *gate      // bounds the acquire rounds in flight
	dials    []*dialLog // by node, for clients openURL made; else nil
	warmer   warmer     // the first connections (see warm)

	done chan struct{} // closed by Close
	stop chan struct{} // closed by Close once leases are finished: workers exit
	// life ends, by endLife, when Close begins: renewals, which may wait
	// for replies until their lease's Deadline, end with it.
	life    context.Context
	endLife context.CancelFunc
	workers []nodeWorkers // per node: the idle workers (onNode)

	mu      sync.Mutex
	closed  bool                       // Close has begun: Campaign and Leader refuse
	stopped bool                       // no more goroutines may start
	leases  map[*lease]struct{}        // live leases, finished by Close
	regs    map[*registration]struct{} // live registry entries, withdrawn by Close
	// orphans holds the entries of failed Registers whose withdrawal no
	// quorum confirmed (see Register).
	orphans orphans.Set[*registration]
	// released holds, by lock key, the latest release round of a lease of
	// this Backend while it may still run (see noteRelease).
	released map[string][]<-chan struct{}
	// floors holds, by lock key, the highest token a lease of this
	// Backend got (see floor); at most maxFloors keys.
	floors map[string]uint64
	wg     sync.WaitGroup // every goroutine the Backend started
}

var (
	_ backend.Backend = (*Backend)(nil)
	_ backend.Warner  = (*Backend)(nil)
)

// New returns a Backend over clients, each one independent Redis master (a
// Redis Cluster or a Sentinel-managed group counts as one node: its
// asynchronous replication can lose a lock on failover, so it is not N
// nodes). Use an odd number of nodes, usually 3 or 5; a single node works but
// tolerates no failure, and an even number tolerates no more failures than
// one node fewer ([Backend.Warnings] says so). opts may be nil for the
// defaults. An invalid client or option makes New return an error wrapping
// [backend.ErrInvalid], and so does a node given twice: the same client
// value, or two clients addressing the same server (compared after
// normalising host:port, without resolving names), since one server
// counted twice could make up a quorum alone.
//
// New does not take ownership of the clients: Close closes only what New
// created; close the clients yourself after Close.
//
// Each *redis.Client, *redis.ClusterClient and *redis.Ring must have
// ContextTimeoutEnabled set, or New returns an error: without it go-redis
// ignores context deadlines on socket reads, and a stalled node would hold
// every round for the client's ReadTimeout instead of [Options.RequestTimeout].
// TLS and ACL/AUTH are configured on the clients as usual.
//
// Unless [Options.NoRestartDelay] is set, New adds a hook to every client
// that counts the connections it dials (see # Safety in the package
// documentation); the hook stays after Close.
func New(clients []redis.UniversalClient, opts *Options) (*Backend, error) {
	return build(clients, opts, nil)
}

// build is New; dials, when not nil, holds a dialLog hooked to each
// client, which messages about failed nodes then quote.
func build(clients []redis.UniversalClient, opts *Options, dials []*dialLog) (*Backend, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	if len(clients) == 0 {
		return nil, fmt.Errorf("redlock: %w: no clients; want at least one Redis master (3 or 5 for fault tolerance)", backend.ErrInvalid)
	}
	ctxBound := true
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("redlock: %w: clients[%d] is nil", backend.ErrInvalid, i)
		}
		known, enabled := contextTimeoutEnabled(c)
		if known && !enabled {
			return nil, fmt.Errorf("redlock: %w: clients[%d] has ContextTimeoutEnabled false; set it in the client's options so RequestTimeout bounds socket reads", backend.ErrInvalid, i)
		}
		ctxBound = ctxBound && known
	}
	if err := checkDistinct(clients); err != nil {
		return nil, err
	}
	b := &Backend{
		clients:  append([]redis.UniversalClient(nil), clients...),
		cfg:      cfg,
		quorum:   len(clients)/2 + 1,
		ctxBound: ctxBound,
		dials:    dials,
		done:     make(chan struct{}),
		gate:     newGate(),
		stop:     make(chan struct{}),
		workers:  make([]nodeWorkers, len(clients)),
		leases:   make(map[*lease]struct{}),
		released: make(map[string][]<-chan struct{}),
		floors:   make(map[string]uint64),
	}
	b.life, b.endLife = context.WithCancel(context.Background())
	if !cfg.noRestartDelay {
		b.restarts = newRestarts(b.clients, cfg.restartDelay)
		b.checkNodes()
	}
	b.notify = newNotifier(b)
	if canBatch(b.clients) {
		b.batch = &batcher{b: b}
	}
	return b, nil
}

// contextTimeoutEnabled reports whether c's concrete type is known and, if
// so, whether it honours ctx deadlines on socket I/O.
func contextTimeoutEnabled(c redis.UniversalClient) (known, enabled bool) {
	switch c := c.(type) {
	case *redis.Client:
		return true, c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return true, c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return true, c.Options().ContextTimeoutEnabled
	}
	return false, false // unknown type: collect's guard timer bounds the wait
}

// spawn runs f in a goroutine the Backend waits for in Close, unless the
// Backend has stopped; it reports whether f was started.
func (b *Backend) spawn(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
	return true
}

// check refuses requests on a closed Backend and invalid election names.
func (b *Backend) check(election string) error {
	select {
	case <-b.done:
		return fmt.Errorf("redlock: election %q: %w", election, backend.ErrClosed)
	default:
	}
	return backend.ValidateElection(election)
}

// Close finishes the Backend: it releases every live lease it handed out
// (compare-and-delete on every node, bounded by RequestTimeout, so a waiting
// candidate elsewhere is elected at once; a node that does not answer lets
// the key expire after its TTL), closes their Lost channels, stops the
// release subscriptions and waits for its goroutines. Campaign and Leader
// then return [backend.ErrClosed]. It does not close the clients. Close is
// idempotent and always returns nil.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.wg.Wait()
		return nil
	}
	b.closed = true
	close(b.done)
	b.endLife() // renewals in flight end: their leases are finished next
	leases := make([]*lease, 0, len(b.leases))
	for l := range b.leases {
		leases = append(leases, l)
	}
	b.mu.Unlock()

	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.finish(context.Background())
		}()
	}
	wg.Wait()
	b.withdrawAll()
	b.notify.close()

	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	close(b.stop)
	b.wg.Wait()
	return nil
}

// track and untrack keep the set of live leases Close must finish.
func (b *Backend) track(l *lease) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.leases[l] = struct{}{}
	return true
}

func (b *Backend) untrack(l *lease) {
	b.mu.Lock()
	delete(b.leases, l)
	b.mu.Unlock()
}
