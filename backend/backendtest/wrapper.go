package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// WrapFunc makes the wrapper under test over Backends that open returns.
// It may call open as often as it needs (once per wrapped Backend); each
// call returns a Backend on a store of its own that has every optional
// ability of package backend. It returns the wrapper, and closes what it
// made when t ends.
type WrapFunc func(t *testing.T, open func() backend.Backend) backend.Backend

// RunWrapper checks that a Backend that wraps others (such as a migrating
// Backend) forwards every optional ability of package backend (see # Optional
// abilities there) when the Backends it wraps have it: each ability is a
// subtest that asserts the wrapper implements the interface and that a call
// reaches a wrapped Backend and returns what it answered. exempt names the
// abilities the wrapper documents it does not forward, each with the
// reason, which the subtest logs instead of checking.
func RunWrapper(t *testing.T, wrap WrapFunc, exempt map[string]string) {
	for name, why := range exempt {
		if !slices.ContainsFunc(abilities, func(a ability) bool { return a.name == name }) {
			t.Fatalf("exempt ability %q: got an unknown name, want one of package backend's optional interfaces", name)
		}
		if why == "" {
			t.Fatalf("exempt ability %q: got no reason, want the one the wrapper documents", name)
		}
	}
	for _, a := range abilities {
		t.Run(a.name, func(t *testing.T) {
			if why, ok := exempt[a.name]; ok {
				t.Logf("not forwarded, as the wrapper documents: %s", why)
				return
			}
			rec := &recorder{}
			b := wrap(t, func() backend.Backend {
				s := &stubBackend{rec: rec, held: map[string]*stubLease{}, changed: make(chan struct{})}
				t.Cleanup(func() { _ = s.Close() })
				return s
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a.check(ctx, t, b)
			if !rec.has(a.name) {
				t.Errorf("%s: got no call on a wrapped Backend, want the wrapper to forward it: a wrapper that hides an ability of what it wraps must document why", a.name)
			}
		})
	}
}

// ability is one optional interface of package backend and the check that
// a wrapper forwards it.
type ability struct {
	name  string
	check func(ctx context.Context, t *testing.T, b backend.Backend)
}

// abilities lists every optional interface declared in package backend's
// optional.go; a test of this package fails when one is missing.
var abilities = []ability{
	{"Watcher", checkWatcher},
	{"BatchReader", checkBatchReader},
	{"TTLFloor", checkTTLFloor},
	{"Warner", checkWarner},
	{"TrailingLease", checkTrailingLease},
	{"SinceRenewer", checkSinceRenewer},
	{"Yielder", checkYielder},
	{"Unwrapper", checkUnwrapper},
	{"Registry", checkRegistry},
	{"Registration", checkRegistration},
}

const (
	stubFloor   = 3 * time.Second
	stubWarning = "stub warning"
)

func checkWatcher(ctx context.Context, t *testing.T, b backend.Backend) {
	w, ok := b.(backend.Watcher)
	if !ok {
		t.Fatalf("%T: got no Watch method, want backend.Watcher", b)
	}
	wctx, cancel := context.WithCancel(ctx)
	got := make(chan backend.Holder, 16)
	done := make(chan error, 1)
	go func() { done <- w.Watch(wctx, "wrapper/watch", func(h backend.Holder) { got <- h }) }()
	select {
	case h := <-got:
		if !h.IsZero() {
			t.Errorf("Watch: got %+v first, want the zero Holder: nobody holds the election", h)
		}
	case err := <-done:
		t.Fatalf("Watch: got %v before a first report, want a report of the current holder", err)
	case <-ctx.Done():
		t.Fatalf("Watch: got no report, want one of the current holder")
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Watch after its ctx ended: got %v, want context.Canceled", err)
	}
}

func checkBatchReader(ctx context.Context, t *testing.T, b backend.Backend) {
	br, ok := b.(backend.BatchReader)
	if !ok {
		t.Fatalf("%T: got no Leaders method, want backend.BatchReader", b)
	}
	hs, errs := br.Leaders(ctx, []string{"wrapper/a", "wrapper/b"})
	if len(hs) != 2 || len(errs) != 2 {
		t.Fatalf("Leaders of 2 elections: got %d holders and %d errors, want 2 each", len(hs), len(errs))
	}
	for i, err := range errs {
		if !errors.Is(err, backend.ErrNoLeader) {
			t.Errorf("Leaders: election %d got error %v, want one wrapping ErrNoLeader: nobody holds it", i, err)
		}
	}
}

func checkTTLFloor(ctx context.Context, t *testing.T, b backend.Backend) {
	f, ok := b.(backend.TTLFloor)
	if !ok {
		t.Fatalf("%T: got no MinTTL method, want backend.TTLFloor", b)
	}
	d, _, err := f.MinTTL(ctx)
	if err != nil || d != stubFloor {
		t.Errorf("MinTTL: got (%v, %v), want %v: the floor of every wrapped Backend", d, err, stubFloor)
	}
}

func checkWarner(_ context.Context, t *testing.T, b backend.Backend) {
	w, ok := b.(backend.Warner)
	if !ok {
		t.Fatalf("%T: got no Warnings method, want backend.Warner", b)
	}
	if got := w.Warnings(); !slices.Contains(got, stubWarning) {
		t.Errorf("Warnings: got %q, want them to include the wrapped Backends' %q", got, stubWarning)
	}
}

// campaign wins an election on b and releases it when t ends.
func campaign(ctx context.Context, t *testing.T, b backend.Backend, election string) backend.Lease {
	l, err := b.Campaign(ctx, backend.Candidate{Election: election, Identity: "wrapper-check", TTL: time.Minute})
	if err != nil {
		t.Fatalf("Campaign(%q): got error %v, want a lease: nobody else campaigns", election, err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	return l
}

func checkTrailingLease(ctx context.Context, t *testing.T, b backend.Backend) {
	l := campaign(ctx, t, b, "wrapper/trailing")
	tl, ok := l.(backend.TrailingLease)
	if !ok {
		t.Fatalf("lease %T: got no DeadlineTrails method, want backend.TrailingLease", l)
	}
	if !tl.DeadlineTrails() {
		t.Errorf("DeadlineTrails: got false, want true: every lease it wraps trails")
	}
}

func checkYielder(ctx context.Context, t *testing.T, b backend.Backend) {
	l := campaign(ctx, t, b, "wrapper/yield")
	y, ok := l.(backend.Yielder)
	if !ok {
		t.Fatalf("lease %T: got no Yield method, want backend.Yielder", l)
	}
	select {
	case <-y.Yield():
	case <-ctx.Done():
		t.Errorf("Yield: the channel never closed, want it closed once a wrapped lease's is (the stub's always is)")
	}
}

func checkSinceRenewer(ctx context.Context, t *testing.T, b backend.Backend) {
	l := campaign(ctx, t, b, "wrapper/since")
	r, ok := l.(backend.SinceRenewer)
	if !ok {
		t.Fatalf("lease %T: got no RenewSince method, want backend.SinceRenewer", l)
	}
	if err := r.RenewSince(ctx, time.Now()); err != nil {
		t.Errorf("RenewSince: got %v, want nil: the lease is held", err)
	}
}

func checkUnwrapper(_ context.Context, t *testing.T, b backend.Backend) {
	if _, ok := b.(backend.Unwrapper); !ok {
		t.Fatalf("%T: got no Unwrap method, want backend.Unwrapper: it is how backend.As reaches a wrapped driver's own API", b)
	}
	var s *stubBackend
	if !backend.As(b, &s) {
		t.Fatalf("backend.As(%T, *stubBackend): got false, want the wrapped Backend", b)
	}
	s.rec.add("Unwrapper")
}

func checkRegistry(ctx context.Context, t *testing.T, b backend.Backend) {
	r, ok := b.(backend.Registry)
	if !ok {
		t.Fatalf("%T: got no Register method, want backend.Registry", b)
	}
	c := backend.Candidate{Election: "wrapper/registry", Identity: "wrapper-check", TTL: time.Minute, Priority: 2}
	reg, err := r.Register(ctx, c, false)
	if err != nil {
		t.Fatalf("Register: got %v, want an entry", err)
	}
	es, err := r.Entries(ctx, c.Election)
	if err != nil || len(es) != 1 || es[0].ID != reg.ID() || es[0].Priority != 2 {
		t.Errorf("Entries after one Register: got (%+v, %v), want the one entry %q of priority 2", es, err, reg.ID())
	}
	if err := reg.Withdraw(ctx); err != nil {
		t.Errorf("Withdraw: got %v, want nil", err)
	}
}

func checkRegistration(ctx context.Context, t *testing.T, b backend.Backend) {
	r, ok := b.(backend.Registry)
	if !ok {
		t.Fatalf("%T: got no Register method, want backend.Registry, whose Register returns a Registration", b)
	}
	reg, err := r.Register(ctx, backend.Candidate{Election: "wrapper/registration", Identity: "wrapper-check", TTL: time.Minute, Priority: 1}, false)
	if err != nil {
		t.Fatalf("Register: got %v, want an entry", err)
	}
	if err := reg.SetAside(ctx, true); err != nil {
		t.Errorf("SetAside(true): got %v, want nil", err)
	}
	es, err := r.Entries(ctx, "wrapper/registration")
	if err != nil || len(es) != 1 || !es[0].Aside {
		t.Errorf("Entries after SetAside(true): got (%+v, %v), want one entry standing aside", es, err)
	}
	if err := reg.Refresh(ctx); err != nil {
		t.Errorf("Refresh: got %v, want nil", err)
	}
	if err := reg.Withdraw(ctx); err != nil {
		t.Errorf("Withdraw: got %v, want nil", err)
	}
}

// recorder records which abilities' calls reached a stubBackend.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, name)
}

func (r *recorder) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.calls, name)
}

// stubBackend is a Backend of one process with every optional ability,
// each recording that it was called. Campaign wins a free election at once
// and waits for a held one.
type stubBackend struct {
	rec *recorder

	mu      sync.Mutex
	held    map[string]*stubLease
	entries map[string][]*stubEntry // the registry of candidates
	token   uint64
	changed chan struct{} // closed and replaced on every change
	closed  bool
}

func (s *stubBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, backend.ErrClosed
		}
		if s.held[c.Election] == nil {
			s.token++
			l := &stubLease{s: s, election: c.Election, identity: c.Identity, token: s.token, ttl: c.TTL,
				deadline: time.Now().Add(c.TTL), lost: make(chan struct{})}
			s.held[c.Election] = l
			s.changeLocked()
			s.mu.Unlock()
			return l, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *stubBackend) changeLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *stubBackend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if err := ctx.Err(); err != nil {
		return backend.Holder{}, err
	}
	if h, _ := s.holder(election); !h.IsZero() {
		return h, nil
	}
	return backend.Holder{}, fmt.Errorf("stub: %q: %w", election, backend.ErrNoLeader)
}

func (s *stubBackend) holder(election string) (backend.Holder, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.held[election]
	if l == nil {
		return backend.Holder{}, s.changed
	}
	return backend.Holder{Election: election, Identity: l.identity, Token: l.token}, s.changed
}

func (s *stubBackend) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		for _, l := range s.held {
			close(l.lost)
		}
		clear(s.held)
		s.changeLocked()
	}
	return nil
}

func (s *stubBackend) Watch(ctx context.Context, election string, fn func(backend.Holder)) error {
	s.rec.add("Watcher")
	var last backend.Holder
	for first := true; ; first = false {
		h, ch := s.holder(election)
		if first || h != last {
			last = h
			fn(h)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *stubBackend) Leaders(ctx context.Context, elections []string) ([]backend.Holder, []error) {
	s.rec.add("BatchReader")
	hs, errs := make([]backend.Holder, len(elections)), make([]error, len(elections))
	for i, e := range elections {
		hs[i], errs[i] = s.Leader(ctx, e)
	}
	return hs, errs
}

func (s *stubBackend) MinTTL(context.Context) (time.Duration, string, error) {
	s.rec.add("TTLFloor")
	return stubFloor, "stub floor", nil
}

func (s *stubBackend) Warnings() []string {
	s.rec.add("Warner")
	return []string{stubWarning}
}

// stubLease is a lease of a stubBackend; it trails and renews since.
type stubLease struct {
	s                  *stubBackend
	election, identity string
	token              uint64
	ttl                time.Duration

	mu       sync.Mutex
	deadline time.Time
	lost     chan struct{}
}

func (l *stubLease) Token() uint64 { return l.token }

func (l *stubLease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

func (l *stubLease) Renew(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.held[l.election] != l {
		return fmt.Errorf("stub: renew %q: %w", l.election, backend.ErrLost)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadline = time.Now().Add(l.ttl)
	return nil
}

func (l *stubLease) Lost() <-chan struct{} { return l.lost }

func (l *stubLease) Release(context.Context) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.held[l.election] != l {
		return nil
	}
	delete(l.s.held, l.election)
	close(l.lost)
	l.s.changeLocked()
	return nil
}

func (l *stubLease) DeadlineTrails() bool {
	l.s.rec.add("TrailingLease")
	return true
}

// Yield asks to yield at once.
func (l *stubLease) Yield() <-chan struct{} {
	l.s.rec.add("Yielder")
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (l *stubLease) RenewSince(ctx context.Context, _ time.Time) error {
	l.s.rec.add("SinceRenewer")
	return l.Renew(ctx)
}

var (
	_ backend.Watcher       = (*stubBackend)(nil)
	_ backend.BatchReader   = (*stubBackend)(nil)
	_ backend.TTLFloor      = (*stubBackend)(nil)
	_ backend.Warner        = (*stubBackend)(nil)
	_ backend.TrailingLease = (*stubLease)(nil)
	_ backend.SinceRenewer  = (*stubLease)(nil)
	_ backend.Yielder       = (*stubLease)(nil)
)

// Register, Entries and WatchEntries make the stub a backend.Registry of
// one process; its entries live until withdrawn.
func (s *stubBackend) Register(ctx context.Context, c backend.Candidate, aside bool) (backend.Registration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.rec.add("Registry")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[string][]*stubEntry{}
	}
	s.token++
	e := &stubEntry{s: s, election: c.Election, e: backend.Entry{ID: fmt.Sprint(s.token), Identity: c.Identity, Priority: c.Priority, Aside: aside}}
	s.entries[c.Election] = append(s.entries[c.Election], e)
	s.changeLocked()
	return e, nil
}

func (s *stubBackend) Entries(ctx context.Context, election string) ([]backend.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var es []backend.Entry
	for _, e := range s.entries[election] {
		es = append(es, e.e)
	}
	return es, nil
}

func (s *stubBackend) WatchEntries(ctx context.Context, election string, fn func([]backend.Entry)) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		es, err := s.Entries(ctx, election)
		if err != nil {
			return err
		}
		fn(es)
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stubEntry is one entry of a stubBackend's registry.
type stubEntry struct {
	s        *stubBackend
	election string
	e        backend.Entry // guarded by s.mu
}

func (e *stubEntry) ID() string { return e.e.ID }

func (e *stubEntry) SetAside(ctx context.Context, aside bool) error {
	e.s.rec.add("Registration")
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.e.Aside = aside
	e.s.changeLocked()
	return nil
}

func (e *stubEntry) Refresh(context.Context) error { return nil }

func (e *stubEntry) Withdraw(context.Context) error {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.s.entries[e.election] = slices.DeleteFunc(e.s.entries[e.election], func(o *stubEntry) bool { return o == e })
	e.s.changeLocked()
	return nil
}
