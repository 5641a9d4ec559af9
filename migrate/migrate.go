package migrate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Backend is a [backend.Backend] that runs an election on an old and a new
// backend according to its [Phase]; see the package documentation for the
// runbook. Create it with [New]. It forwards every optional ability of the
// backends it wraps (a [backend.Watcher], a [backend.BatchReader], a
// [backend.TTLFloor], ...; see package backend's index), so an elector
// watches it for leader changes and a partition group reads it in batches.
type Backend struct {
	old, new backend.Backend
	phase    Phase
	set      settings

	done      chan struct{} // closed by Close
	closeOnce sync.Once

	mu     sync.Mutex
	marked map[string]bool // elections seen marked on the old store
}

var _ backend.Backend = (*Backend)(nil)

// Options configures a [Backend]. The zero value is valid in every phase
// when the old backend is one of this module's drivers.
type Options struct {
	// Epoch is the epoch of the old backend's tokens; the new backend's
	// tokens carry Epoch+1 (see # Fencing in the package documentation).
	// Default 0: the old backend's replicas ran without this package, so
	// their tokens are the store's own and a fence has seen nothing higher.
	// When migrating again, set it to the previous migration's Epoch+1.
	// At most [MaxEpoch]-1.
	Epoch uint16

	// NewName names the new backend in the marker's identity,
	// [MarkerPrefix]+NewName, which the old store then reports as the
	// election's holder. Default "new". Use the scheme, such as "etcd".
	NewName string

	// Marker writes the persistent "migrated" marker on the old store. It is
	// used in [PhaseNew] only; the other phases detect the marker through
	// the old backend's Leader. Default: the old backend itself, when it
	// implements Marker, as every driver of this module does
	// (redlock.Backend, etcd.Backend, zookeeper.Backend). PhaseNew needs
	// one or the other.
	Marker Marker

	// RenewInterval is how often a campaign that holds the old backend's
	// lease renews it while it waits for the new backend's. Default a third
	// of the candidate's TTL.
	RenewInterval time.Duration
}

type settings struct {
	epoch         uint16
	newName       string
	marker        Marker
	renewInterval time.Duration
}

// New returns a Backend running elections in phase over old and new. old
// may be nil only in [PhaseDone] (after [Cleanup]), new never. opts may be nil for the
// defaults. old and new must be backends of two different stores: New
// refuses the same Backend value as both, and a migrate Backend as either
// (it cannot tell two handles on one store apart; the URL form compares
// the stores' addresses and key prefixes).
//
// New does not take ownership of old and new: Close closes only what New
// created; close old and new yourself after Close (that frees the leases
// they still hold).
func New(old, new backend.Backend, phase Phase, opts *Options) (*Backend, error) {
	if opts == nil {
		opts = &Options{}
	}
	set := settings{epoch: opts.Epoch, newName: opts.NewName, marker: opts.Marker, renewInterval: opts.RenewInterval}
	switch {
	case !phase.valid():
		return nil, fmt.Errorf("migrate: %w: phase is %d; want PhaseOld, PhaseBoth, PhaseNew or PhaseDone", backend.ErrInvalid, int(phase))
	case new == nil:
		return nil, fmt.Errorf("migrate: %w: new backend is nil", backend.ErrInvalid)
	case old == nil && phase != PhaseDone:
		return nil, fmt.Errorf("migrate: %w: old backend is nil in phase %v; want one in every phase but done", backend.ErrInvalid, phase)
	case isMigrate(old) || isMigrate(new):
		return nil, fmt.Errorf("migrate: %w: a migrate Backend as the old or the new backend; want the stores' own backends: one migration runs at a time", backend.ErrInvalid)
	case sameBackend(old, new):
		return nil, fmt.Errorf("migrate: %w: the old and the new backend are the same %T; want two stores (a candidate would wait behind its own old lease on the new side for ever)", backend.ErrInvalid, old)
	case opts.Epoch >= MaxEpoch:
		return nil, fmt.Errorf("migrate: %w: Options.Epoch is %d; want at most %d", backend.ErrInvalid, opts.Epoch, MaxEpoch-1)
	case opts.RenewInterval < 0:
		return nil, fmt.Errorf("migrate: %w: Options.RenewInterval is %v; want 0 (a third of the TTL) or more", backend.ErrInvalid, opts.RenewInterval)
	case phase == PhaseNew && opts.Marker == nil && !isMarker(old):
		return nil, fmt.Errorf("migrate: %w: Options.Marker is nil in phase new and the old backend %T does not implement Marker; want the marker writer of the old store (runbook step 3 writes the marker)", backend.ErrInvalid, old)
	}
	if set.newName == "" {
		set.newName = "new"
	}
	if m, ok := old.(Marker); ok && set.marker == nil {
		set.marker = m
	}
	if err := backend.ValidateIdentity(MarkerPrefix + set.newName); err != nil {
		return nil, fmt.Errorf("migrate: Options.NewName is %q; want a valid identity suffix: %w", opts.NewName, err)
	}
	return &Backend{old: old, new: new, phase: phase, set: set, done: make(chan struct{}), marked: make(map[string]bool)}, nil
}

// isMigrate reports whether be is a migrate Backend.
func isMigrate(be backend.Backend) bool {
	_, ok := be.(*Backend)
	return ok
}

// sameBackend reports whether old and new are the same value.
func sameBackend(old, new backend.Backend) bool {
	if old == nil || !reflect.TypeOf(old).Comparable() || reflect.TypeOf(old) != reflect.TypeOf(new) {
		return false
	}
	return old == new
}

// isMarker reports whether be implements [Marker].
func isMarker(be backend.Backend) bool {
	_, ok := be.(Marker)
	return ok
}

// Phase returns the phase b runs in.
func (b *Backend) Phase() Phase { return b.phase }

// MarkerIdentity returns the identity of the marker b writes and the old
// store then reports as the holder: [MarkerPrefix] + [Options.NewName].
func (b *Backend) MarkerIdentity() string { return MarkerPrefix + b.set.newName }

// oldEpoch and newEpoch are the epochs of the two sides' tokens.
func (b *Backend) oldEpoch() uint16 { return b.set.epoch }
func (b *Backend) newEpoch() uint16 { return b.set.epoch + 1 }

func (b *Backend) check(op, election string) error {
	select {
	case <-b.done:
		return fmt.Errorf("migrate: %s %q: %w", op, election, backend.ErrClosed)
	default:
	}
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("migrate: %s: %w", op, err)
	}
	return nil
}

// Campaign implements [backend.Backend.Campaign] for b's phase:
//
//   - PhaseOld campaigns on the old backend; it returns an error wrapping
//     [backend.ErrInvalid] when the old store carries the marker, also when
//     the marker appears while it waits.
//   - PhaseBoth campaigns on the old backend, then, holding it (and
//     renewing it every RenewInterval), on the new one; if the new campaign
//     fails the old lease is released. Once the marker is on the old store
//     it campaigns on the new backend alone.
//   - PhaseNew campaigns on the new backend alone once the old store
//     carries the marker. Before that it campaigns as PhaseBoth and, having
//     won, writes the marker with [Options.Marker]; the term then holds the
//     new backend's lease only.
//   - PhaseDone campaigns on the new backend alone. Given an old backend,
//     it first reads (once per election) the old store's holder, and
//     returns an error wrapping [backend.ErrInvalid] when it is a candidate
//     rather than the marker: a replica still leads or campaigns on the
//     old store, so runbook step 3 is not done, and leading on the new
//     store alone could overlap with it. The marker, and an old store with
//     no holder (as [Cleanup] leaves it), let it go on.
//
// The lease's token is described in # Fencing of the package
// documentation. A native token above [MaxNative] makes Campaign release
// what it won and return an error wrapping [backend.ErrInvalid].
func (b *Backend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if err := b.check("campaign", c.Election); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var l *lease
	var err error
	switch b.phase {
	case PhaseOld:
		l, err = b.campaignOldOnly(ctx, c)
	case PhaseBoth:
		l, err = b.campaignBoth(ctx, c, false)
	case PhaseNew:
		l, err = b.campaignBoth(ctx, c, true)
	default:
		l, err = b.campaignDone(ctx, c)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	l.watch()
	return l, nil
}

// campaignOldOnly is PhaseOld's campaign.
func (b *Backend) campaignOldOnly(ctx context.Context, c backend.Candidate) (*lease, error) {
	lo, err := b.campaignOld(ctx, c)
	if errors.Is(err, errMarked) {
		h, _, _ := marked(ctx, b.old, c.Election)
		if h.Identity == "" {
			h.Identity = MarkerPrefix + "?"
		}
		return nil, refusedError(c.Election, h)
	}
	if err != nil {
		return nil, err
	}
	return b.newLease(ctx, b.oldEpoch(), lo.Token(), lo, nil)
}

// campaignNewOnly campaigns on the new backend alone.
func (b *Backend) campaignNewOnly(ctx context.Context, c backend.Candidate) (*lease, error) {
	ln, err := b.new.Campaign(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("migrate: campaign %q on the new backend: %w", c.Election, err)
	}
	return b.newLease(ctx, b.newEpoch(), ln.Token(), nil, ln)
}

// campaignDone is PhaseDone's campaign.
func (b *Backend) campaignDone(ctx context.Context, c backend.Candidate) (*lease, error) {
	if b.old != nil && !b.seenMarked(c.Election) {
		h, ok, err := marked(ctx, b.old, c.Election)
		switch {
		case err != nil:
			return nil, fmt.Errorf("migrate: campaign %q: read the old store: %w", c.Election, err)
		case !ok && !h.IsZero():
			return nil, fmt.Errorf("migrate: campaign %q in phase done (runbook step 4): %w: the old store's holder is %q (token %d), a candidate, not the migrated marker: a replica leads or campaigns on the old store (runbook step 3 is not done, or an old-only replica started after cleanup); keep replicas in phase new until one has led and the old store reports the marker, and stop replicas configured for the old store alone",
				c.Election, backend.ErrInvalid, h.Identity, h.Token)
		}
		b.setMarked(c.Election)
	}
	return b.campaignNewOnly(ctx, c)
}

// newLease wraps the won leases, or releases them and returns an error when
// the native token does not fit the encoding.
func (b *Backend) newLease(ctx context.Context, epoch uint16, native uint64, lo, ln backend.Lease) (*lease, error) {
	token, err := Token(epoch, native)
	if err != nil {
		l := &lease{b: b, old: lo, new: ln, lost: make(chan struct{})}
		_ = l.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	return &lease{b: b, token: token, old: lo, new: ln, lost: make(chan struct{})}, nil
}

// seenMarked and setMarked cache that an election carries the marker (or,
// in PhaseDone, that the old store had no candidate holder): once written
// the marker stays until Cleanup, after which replicas run in PhaseDone.
func (b *Backend) seenMarked(election string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.marked[election]
}

func (b *Backend) setMarked(election string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.marked[election] = true
}

// Close implements [backend.Backend.Close]: the Lost channels of b's leases
// close, their Renew returns [backend.ErrClosed], and Campaign and Leader
// return [backend.ErrClosed]. It does not close the old and new backends or
// release the leases there; closing those backends does. Close is
// idempotent and returns nil.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() { close(b.done) })
	return nil
}
