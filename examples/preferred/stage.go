package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend/memory"
)

// patience is how long the program waits for any one step before it gives
// up with an error.
const patience = 10 * time.Second

// stage is one election on an in-memory store and the replicas that
// campaign for it, each a process of its own with its own connection to
// the store. It prints the steps and checks that no two terms overlap.
type stage struct {
	w        io.Writer
	store    *memory.Backend // the onlooker's connection: reads the registry and the leader
	election string

	replicas []*replica    // in the order they started
	reported chan struct{} // receives when a replica reports an event

	mu     sync.Mutex
	acting *replica // the replica whose OnElected runs, if any
	faults []error  // what went against the recipe, reported by check
}

func newStage(w io.Writer, election string) *stage {
	return &stage{w: w, store: memory.New(), election: election, reported: make(chan struct{}, 1)}
}

func (s *stage) say(format string, args ...any) {
	fmt.Fprintf(s.w, format+"\n", args...)
}

func (s *stage) fault(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, err)
}

// check returns what went against the recipe: terms that overlapped,
// events nobody expected.
func (s *stage) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.faults...)
}

// enter records that r's OnElected starts: no other replica's may be
// running.
func (s *stage) enter(r *replica, t elector.Term) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acting != nil {
		s.faults = append(s.faults, fmt.Errorf("%s elected with token %d while the OnElected of %s had not returned", r.name, t.Token, s.acting.name))
	}
	s.acting = r
}

// leave records that r's OnElected returns.
func (s *stage) leave(r *replica) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acting == r {
		s.acting = nil
	}
}

// replica is one candidate process.
type replica struct {
	s        *stage
	name     string
	group    string // the version or zone it belongs to
	priority int
	b        *memory.Backend
	events   chan event
	crashed  atomic.Bool
	cancel   context.CancelFunc
	done     chan error // Run's result
	stopped  bool
}

// event is a call of OnElected or OnRevoked.
type event struct {
	term    elector.Term
	revoked bool
	reason  error     // why the term ended (revoked only)
	at      time.Time // when the callback was called
}

func (r *replica) String() string {
	return fmt.Sprintf("%s (%s, priority %d)", r.name, r.group, r.priority)
}

// start starts a replica: a process that connects to the store and runs an
// Elector with the given priority.
func (s *stage) start(name, group string, priority int) *replica {
	r := &replica{s: s, name: name, group: group, priority: priority, b: s.store.Peer(),
		events: make(chan event, 8), done: make(chan error, 1)}
	e, err := elector.New(r.b, s.election, &elector.Options{
		Identity: name,
		Priority: priority,
		TTL:      ttl,
		MinTerm:  minTerm,
		Logger:   slog.New(slog.DiscardHandler),
		OnElected: func(ctx context.Context, t elector.Term) {
			s.enter(r, t)
			defer s.leave(r)
			r.report(event{term: t, at: time.Now()})
			<-ctx.Done() // lead until the term ends
		},
		OnRevoked: func(t elector.Term, reason error) {
			r.report(event{term: t, revoked: true, reason: reason, at: time.Now()})
		},
	})
	if err != nil {
		panic(err) // the options above are valid
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- e.Run(ctx) }()
	s.replicas = append(s.replicas, r)
	return r
}

// report hands an event to the program. A crashed process reports nothing.
func (r *replica) report(ev event) {
	if r.crashed.Load() {
		return
	}
	select {
	case r.events <- ev:
	default:
		r.s.fault(fmt.Errorf("%s: more events than expected", r.name))
	}
	select {
	case r.s.reported <- struct{}{}:
	default:
	}
}

// next returns r's next event.
func (r *replica) next() (event, error) {
	select {
	case ev := <-r.events:
		return ev, nil
	case <-time.After(patience):
		return event{}, fmt.Errorf("%s: nothing happened within %v", r.name, patience)
	}
}

// elected waits for r to be elected and returns its term.
func (r *replica) elected() (elector.Term, error) {
	ev, err := r.next()
	if err != nil {
		return elector.Term{}, err
	}
	if ev.revoked {
		return elector.Term{}, fmt.Errorf("%s: term %d ended (%v); want a new term", r.name, ev.term.Token, ev.reason)
	}
	return ev.term, nil
}

// yielded waits for r's term to end by a yield to a higher priority, after
// at least its MinTerm, and returns the event.
func (r *replica) yielded() (event, error) {
	ev, err := r.next()
	switch {
	case err != nil:
		return ev, err
	case !ev.revoked:
		return ev, fmt.Errorf("%s: elected with token %d; want its term to end", r.name, ev.term.Token)
	case !errors.Is(ev.reason, elector.ErrPreempted):
		return ev, fmt.Errorf("%s: term %d ended: %v; want elector.ErrPreempted", r.name, ev.term.Token, ev.reason)
	case ev.at.Sub(ev.term.Start) < minTerm:
		return ev, fmt.Errorf("%s: term %d yielded after %v; want at least MinTerm %v", r.name, ev.term.Token, ev.at.Sub(ev.term.Start), minTerm)
	}
	return ev, nil
}

// crash stops r as a crash would: its connection stops at once, and its
// lease and registry entry stay in the store until they expire.
func (r *replica) crash() {
	r.crashed.Store(true)
	r.b.Crash()
}

// stop stops r gracefully: its term, if any, ends with context.Canceled
// and its lease and entry are given back. Nothing else may have happened
// to it since the program last looked.
func (r *replica) stop() error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	r.cancel()
	err := <-r.done
	defer r.b.Close()
	if r.crashed.Load() {
		return nil // Run ended when the connection did
	}
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: Run returned %v; want context.Canceled", r.name, err)
	}
	for {
		select {
		case ev := <-r.events:
			if !ev.revoked || !errors.Is(ev.reason, context.Canceled) {
				return fmt.Errorf("%s: unexpected event: term %d revoked=%v reason %v", r.name, ev.term.Token, ev.revoked, ev.reason)
			}
		default:
			return nil
		}
	}
}

// stopAll stops every replica still running, leader last, so that no
// other is elected meanwhile.
func (s *stage) stopAll(leader *replica) error {
	var errs []error
	for _, r := range slices.Backward(s.replicas) {
		if r != leader {
			errs = append(errs, r.stop())
		}
	}
	if leader != nil {
		errs = append(errs, leader.stop())
	}
	return errors.Join(errs...)
}

// watch watches the election for d, and reports an error if any replica
// is elected or its term ends meanwhile.
func (s *stage) watch(d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		for _, r := range s.replicas {
			select {
			case ev := <-r.events:
				if ev.revoked {
					return fmt.Errorf("%s: term %d ended: %v", r.name, ev.term.Token, ev.reason)
				}
				return fmt.Errorf("%s: elected with token %d", r.name, ev.term.Token)
			default:
			}
		}
		select {
		case <-s.reported: // look again
		case <-timer.C:
			return nil
		}
	}
}

// leads reports an error unless r holds the election with token.
func (s *stage) leads(r *replica, token uint64) error {
	h, err := s.store.Leader(context.Background(), s.election)
	if err != nil {
		return err
	}
	if h.Identity != r.name || h.Token != token {
		return fmt.Errorf("leader %s with token %d; want %s with token %d", h.Identity, h.Token, r.name, token)
	}
	return nil
}

// until waits until the registry of candidates satisfies all of conds and
// returns its entries then.
func (s *stage) until(conds ...func([]elector.Entry) bool) ([]elector.Entry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var got []elector.Entry
	err := s.store.WatchEntries(ctx, s.election, func(list []elector.Entry) {
		for _, c := range conds {
			if !c(list) {
				return
			}
		}
		if got == nil {
			got = slices.Clone(list)
			cancel()
		}
	})
	if got == nil {
		return nil, fmt.Errorf("the candidates did not reach the expected state within %v: %w", patience, err)
	}
	return got, nil
}

// campaigning is a condition of until: r's entry is live and not aside.
func campaigning(r *replica) func([]elector.Entry) bool {
	return func(list []elector.Entry) bool { return has(list, r.name, false) }
}

// aside is a condition of until: r's entry is live and aside.
func aside(r *replica) func([]elector.Entry) bool {
	return func(list []elector.Entry) bool { return has(list, r.name, true) }
}

func has(list []elector.Entry, identity string, aside bool) bool {
	return slices.ContainsFunc(list, func(en elector.Entry) bool { return en.Identity == identity && en.Aside == aside })
}

// candidates lists the live candidates of the election.
func (s *stage) candidates() ([]elector.Entry, error) {
	return s.store.Entries(context.Background(), s.election)
}

// registry formats entries, sorted by identity.
func registry(list []elector.Entry) string {
	list = slices.SortedFunc(slices.Values(list), func(a, b elector.Entry) int {
		return cmp.Or(cmp.Compare(a.Identity, b.Identity), cmp.Compare(a.ID, b.ID))
	})
	parts := make([]string, len(list))
	for i, en := range list {
		parts[i] = fmt.Sprintf("%s priority %d", en.Identity, en.Priority)
		if en.Aside {
			parts[i] += " aside"
		}
	}
	return "registry: " + strings.Join(parts, ", ")
}

// close closes the onlooker's connection.
func (s *stage) close() { s.store.Close() }
