package partition

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
)

// Assigner is one member of a group sharing n partitions: it joins the
// group's member list, owns the partitions placed on it, hands over those
// placed elsewhere, and runs [Options.OnAssigned] for each partition it owns.
// Create it with [New], then call [Assigner.Run]. All methods are safe for
// concurrent use.
type Assigner struct {
	b     backend.Backend
	group string
	n     int
	opts  Options // resolved
	log   *slog.Logger

	running atomic.Bool

	mu      sync.Mutex
	owned   map[int]Assignment
	members []string
}

// New returns an Assigner for n partitions, numbered 0 to n-1, of group on
// b. Partition p is decided by the election [Election](group, p); members
// register in the elections group/m/0, group/m/1, … New validates the
// arguments and options, returning an error wrapping [backend.ErrInvalid]
// that names the first problem. It does not contact the backend.
//
// Every member of a group must use the same n.
func New(b backend.Backend, group string, n int, opts *Options) (*Assigner, error) {
	if err := validateNew(b, group, n); err != nil {
		return nil, err
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	return &Assigner{
		b: b, group: group, n: n, opts: o,
		log:   o.Logger.With("group", group, "identity", o.Identity),
		owned: make(map[int]Assignment),
	}, nil
}

// Identity returns the identity this member joins with: the one in its
// Options, or the generated default.
func (a *Assigner) Identity() string { return a.opts.Identity }

// Run joins the group and, until ctx ends, keeps this member's share of the
// partitions: it campaigns for each partition placed on it (see [Place]),
// runs OnAssigned for each one it wins, renews their leases, and hands over
// each partition the member list places elsewhere — cancelling its ctx,
// waiting for OnAssigned to return, releasing the lease so that the new
// owner, already waiting, is elected at once, then calling OnRevoked.
//
// When ctx ends, Run leaves the member list first, so the others start
// campaigning, then hands over every partition the same way, and returns
// ctx.Err() unwrapped once every OnAssigned and OnRevoked has returned; a
// partition won once ctx has ended runs no OnAssigned and is released. It
// returns early only when the backend fails permanently (it was closed or
// refuses a name), with an error wrapping [backend.ErrClosed] or
// [backend.ErrInvalid], after revoking every partition with that error. No
// goroutine it started outlives it. Only one Run may be active at a time;
// another returns [ErrRunning].
func (a *Assigner) Run(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer a.running.Store(false)
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newMembership(a)
	memberDone := make(chan error, 1)
	go func() { memberDone <- m.run(mctx) }()
	l := newLoop(a)
	err := l.run(ctx, m.out, memberDone, cancel)
	if !l.memberDone {
		<-memberDone
	}
	a.setMembers(nil)
	return err
}

// Owned returns the partitions this member owns now, by partition number:
// those whose OnAssigned ctx has not been cancelled.
func (a *Assigner) Owned() []Assignment {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.SortedFunc(maps.Values(a.owned), func(x, y Assignment) int { return x.Partition - y.Partition })
}

// Members returns the member list this member last read, sorted: the
// identities placement is computed from. It is empty while Run is not
// running.
func (a *Assigner) Members() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.members)
}

func (a *Assigner) setMembers(m []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.members = m
}

func (a *Assigner) setOwned(as Assignment, owned bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if owned {
		a.owned[as.Partition] = as
	} else {
		delete(a.owned, as.Partition)
	}
}

// timing returns the timing of the partitions' leases for the term engine.
func (a *Assigner) timing() term.Timing {
	return term.Timing{TTL: a.opts.TTL, RenewInterval: a.opts.RenewInterval, SafetyMargin: a.opts.SafetyMargin}
}

// observe reports ev to the Observer, if any.
func (a *Assigner) observe(p int, ev elector.Event) {
	if a.opts.Observer != nil {
		ev.Election = Election(a.group, p)
		a.opts.Observer(ev)
	}
}
