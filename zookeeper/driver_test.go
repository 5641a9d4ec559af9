package zookeeper

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// fixture is a harness with a watchdog context for driver-level tests.
type fixture struct {
	*harness
	t   *testing.T
	ctx context.Context
}

func newFixture(t *testing.T) *fixture {
	h := newHarness(t)
	t.Cleanup(h.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &fixture{harness: h, t: t, ctx: ctx}
}

func (f *fixture) backend(opts *Options) (*Backend, *faultDialer) {
	f.t.Helper()
	b, d, err := f.newBackend(opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { b.Close() })
	return b, d
}

func (f *fixture) acquire(b *Backend, election, id string) *lease {
	f.t.Helper()
	return f.acquireFor(b, election, id, testTTL)
}

// acquireFor is acquire with a term of ttl.
func (f *fixture) acquireFor(b *Backend, election, id string, ttl time.Duration) *lease {
	f.t.Helper()
	l, err := b.Campaign(f.ctx, backend.Candidate{Election: election, Identity: id, TTL: ttl})
	if err != nil {
		f.t.Fatalf("Campaign(%q, %q): %v", election, id, err)
	}
	return l.(*lease)
}

func (f *fixture) campaignAsync(b *Backend, election, id string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := b.Campaign(f.ctx, backend.Candidate{Election: election, Identity: id, TTL: testTTL})
		ch <- result{l, err, time.Now()}
	}()
	return ch
}

func (f *fixture) await(ch <-chan result, d time.Duration, rule string) result {
	f.t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			f.t.Fatalf("Campaign: got %v, want a lease: %s", r.err, rule)
		}
		return r
	case <-time.After(d):
		f.t.Fatalf("Campaign: no lease within %v: %s", d, rule)
	}
	return result{}
}

// candidates lists the candidate znodes of election, as the admin sees them
// once its server has caught up with the ensemble's leader (a lagging
// follower could show a list from before the test's last write).
func (f *fixture) candidates(election string) []string {
	f.t.Helper()
	if _, err := f.admin.Sync("/"); err != nil {
		f.t.Fatal(err)
	}
	kids, _, err := f.admin.Children(testPrefix + "/" + election)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		f.t.Fatal(err)
	}
	var out []string
	for _, c := range sortCandidates(kids) {
		out = append(out, c.name)
	}
	return out
}

// awaitLost waits for l's Lost to close, failing t after d.
func awaitLost(t *testing.T, l backend.Lease, d time.Duration, rule string) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(d):
		t.Fatalf("Lost still open after %v: %s", d, rule)
	}
}

// awaitCandidates waits until election has n candidate znodes, as the
// admin sees them, looking again at each change of its children (or of
// its existence), and fails t after d.
func (f *fixture) awaitCandidates(election string, n int, d time.Duration, rule string) {
	f.t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	dir := testPrefix + "/" + election
	for {
		if _, err := f.admin.Sync("/"); err != nil {
			f.t.Fatal(err)
		}
		kids, _, changed, err := f.admin.ChildrenW(dir)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			ok, _, changed, err = f.admin.ExistsW(dir)
			if err == nil && ok {
				continue // created meanwhile: watch its children
			}
		}
		if err != nil {
			f.t.Fatal(err)
		}
		if len(sortCandidates(kids)) == n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			f.t.Fatalf("%d candidates of %s after %v, want %d: %s", len(f.candidates(election)), election, d, n, rule)
		}
	}
}

// awaitSession waits until cond holds for s's state, looking again at each
// change of it, and fails t after d.
func awaitSession(t *testing.T, s *session, d time.Duration, cond func(state) bool, rule string) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		st, changed := s.state()
		if cond(st) {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("condition not met within %v: %s", d, rule)
		}
	}
}

// eventually polls cond every 10ms for up to d.
func eventually(t *testing.T, d time.Duration, cond func() bool, rule string) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("condition not met within %v: %s", d, rule)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lost(l backend.Lease) bool {
	select {
	case <-l.Lost():
		return true
	default:
		return false
	}
}

func TestDeadlineFollowsPings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, _ := f.backend(nil)
	l := f.acquire(b, "pings-"+randomSuffix(), "alice")
	first := l.Deadline()
	// No Renew: go-zookeeper's pings (every third of the timeout) alone move
	// the Deadline.
	eventually(t, 10*time.Second, func() bool { return l.Deadline().After(first.Add(testTTL / 10)) },
		"answered pings move the Deadline")
	if lost(l) {
		t.Fatal("Lost closed on a healthy lease")
	}
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	d := l.Deadline()
	time.Sleep(testTTL / 2) // pings keep flowing on the session
	if !l.Deadline().Equal(d) {
		t.Fatalf("Deadline of a released lease: moved by %v, want frozen", l.Deadline().Sub(d))
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, _ := f.backend(nil)
	election := "guard-" + randomSuffix()
	data := testPrefix + "/guarded-" + randomSuffix()
	if _, err := f.admin.Create(data, []byte("v0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	defer f.admin.Delete(data, -1)
	l := f.acquire(b, election, "alice")
	check, err := b.Guard(election, l.Token())
	if err != nil {
		t.Fatalf("Guard of a held term: %v", err)
	}
	// The guarded write commits while the term is current, on any session.
	if _, err := f.admin.Multi(check, &zk.SetDataRequest{Path: data, Data: []byte("v1"), Version: -1}); err != nil {
		t.Fatalf("guarded Multi during the term: got %v, want nil", err)
	}
	if _, err := b.Guard(election, l.Token()+1); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Guard with another token: got %v, want ErrLost", err)
	}
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Guard(election, l.Token()); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Guard after Release: got %v, want ErrLost", err)
	}
	// A stale leader that kept its check op writes nothing.
	successor := f.acquire(b, election, "bob")
	defer successor.Release(f.ctx)
	if _, err := f.admin.Multi(check, &zk.SetDataRequest{Path: data, Data: []byte("stale"), Version: -1}); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("guarded Multi after the term: got %v, want zk.ErrNoNode", err)
	}
	if got, _, _ := f.admin.Get(data); string(got) != "v1" {
		t.Fatalf("guarded data: got %q, want v1: a stale term's write must not commit", got)
	}
}

func TestDisconnectStepsDownAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, da := f.backend(nil)
	b, _ := f.backend(nil)
	election := "disconnect-" + randomSuffix()
	// Alice's term is 20 s, so that her Deadline is more than 10 s off when
	// her connection drops: a loaded machine, allowed 5 s for each step
	// below, is not mistaken for her Deadline passing.
	const term = 20 * time.Second
	l := f.acquireFor(a, election, "alice", term)
	waiting := f.campaignAsync(b, election, "bob")
	f.awaitCandidates(election, 2, 10*time.Second, "bob queues")
	dropped := time.Now()
	da.drop()
	awaitLost(t, l, 5*time.Second, "a disconnection ends the lease at once (Curator's standard policy)")
	// The session survives the drop. Alice learns of the loss through Lost
	// and may act until she stops: her znode must stay, and bob wait, until
	// she releases the lease (or her Deadline passes). Deleting it on
	// reconnection let bob lead while alice still acted (a chaos overlap).
	awaitSession(t, l.s, 5*time.Second, func(st state) bool { return st.up }, "the session reconnects")
	ok, _, changed, err := f.admin.ExistsW(l.path)
	if err != nil || !ok {
		t.Fatalf("alice's znode went (exists %v, %v) before she released it or her Deadline passed", ok, err)
	}
	select { // for half a second, with alice's znode watched
	case ev := <-changed:
		t.Fatalf("alice's znode changed (%v) before she released it or her Deadline passed", ev.Type)
	case r := <-waiting:
		t.Fatalf("bob led (%v) while alice had not released and her Deadline had not passed", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	released := time.Now()
	if err := l.Release(f.ctx); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Release of the lost lease: got %v, want ErrLost", err)
	}
	r := f.await(waiting, 5*time.Second, "the next candidate leads once the stepped-down leader released, not at her Deadline")
	t.Logf("lease lost at once; successor elected %v after alice released, %v after the drop", r.at.Sub(released), r.at.Sub(dropped))
	if err := l.Renew(f.ctx); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Renew of the stepped-down lease: got %v, want ErrLost", err)
	}
	if err := r.l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDisconnectGraceRidesOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A grace of 10 s, and a term twice that, so that a loaded machine's slow
	// reconnection is still told apart from the grace running out.
	const grace = 10 * time.Second
	a, da := f.backend(&Options{Prefix: testPrefix, DisconnectGrace: grace})
	election := "grace-" + randomSuffix()
	l := f.acquireFor(a, election, "alice", 2*grace)
	before, _ := l.s.state()
	da.drop()
	awaitSession(t, l.s, grace/2, func(now state) bool {
		return now.up && now.epoch > before.epoch && now.id == before.id
	}, "the session reconnects")
	if err := l.Renew(f.ctx); err != nil {
		t.Fatalf("Renew after a short disconnection inside the grace: got %v, want nil", err)
	}
	if lost(l) {
		t.Fatal("Lost closed, want the lease to ride out a disconnection inside DisconnectGrace")
	}
	if got := f.candidates(election); len(got) != 1 || testPrefix+"/"+election+"/"+got[0] != l.path {
		t.Fatalf("candidates: got %v, want only the leader's znode", got)
	}
	// A disconnection longer than the grace ends the lease: the connection
	// breaks and no new one is let through.
	da.setCut(true)
	da.drop()
	awaitLost(t, l, 2*grace, "a disconnection past the grace ends the lease")
}

func TestCutLeaderStepsDownBeforeExpiry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, da := f.backend(nil)
	b, _ := f.backend(nil)
	election := "cut-" + randomSuffix()
	// Cut off, alice's session notices the silence after two thirds of its
	// timeout, and the servers expire it after all of it: a term of 15 s
	// leaves 5 s between the two, so that a loaded machine still steps down
	// before the successor's election.
	const term = 15 * time.Second
	l := f.acquireFor(a, election, "alice", term)
	waiting := f.campaignAsync(b, election, "bob")
	f.awaitCandidates(election, 2, 10*time.Second, "bob queues")
	var steppedDown time.Time
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-l.Lost()
		steppedDown = time.Now()
	}()
	da.setCut(true) // silent: no reset, the server keeps the session until it expires
	r := f.await(waiting, term+10*time.Second, "the cut-off leader's session expires")
	wg.Wait()
	deadline := l.Deadline()
	t.Logf("leader stepped down %v before the successor was elected; Deadline %v before", r.at.Sub(steppedDown), r.at.Sub(deadline))
	if !steppedDown.Before(r.at) || !deadline.Before(r.at) {
		t.Fatalf("cut-off leader: Lost at %v and Deadline %v relative to the successor's election, want both before it",
			steppedDown.Sub(r.at), deadline.Sub(r.at))
	}
	if r.l.Token() <= l.Token() {
		t.Fatalf("successor token %d, want > %d", r.l.Token(), l.Token())
	}
	if err := r.l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSessionExpiryRecampaigns(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, da := f.backend(nil)
	election := "expiry-" + randomSuffix()
	l := f.acquire(a, election, "alice")
	old, _ := l.s.state()
	da.setCut(true)
	awaitLost(t, l, 10*time.Second, "the cut-off lease is lost")
	f.awaitCandidates(election, 0, 15*time.Second, "the servers expire the session")
	da.setCut(false)
	awaitSession(t, l.s, 15*time.Second, func(now state) bool {
		return now.up && now.id != old.id && now.id != 0
	}, "the Backend opens a new session")
	l2 := f.acquire(a, election, "alice")
	if l2.Token() <= l.Token() {
		t.Fatalf("token after expiry: got %d, want > %d", l2.Token(), l.Token())
	}
	if err := l.Renew(f.ctx); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Renew of the expired lease: got %v, want ErrLost", err)
	}
	if err := l2.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
}

func TestProtectedCreate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, da := f.backend(nil)
	election := "protected-" + randomSuffix()
	f.acquire(a, election+"-warmup", "x").Release(f.ctx) // parents exist
	f.acquire(a, election, "first").Release(f.ctx)
	da.dropCreate.Store(true) // the next create's reply is lost with its connection
	l := f.acquire(a, election, "alice")
	if da.dropCreate.Load() {
		t.Fatal("no create request went out")
	}
	if got := f.candidates(election); len(got) != 1 || testPrefix+"/"+election+"/"+got[0] != l.path {
		t.Fatalf("candidates: got %v, want only the adopted znode %s: protected create leaves no orphan", got, l.path)
	}
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
}

// A Register whose create reply is lost with its connection finds the
// entry it created rather than leave it on the session beside a second
// one: readers list the candidate once.
func TestProtectedRegister(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, da := f.backend(nil)
	r, _ := f.backend(nil)
	election := "protected-register-" + randomSuffix()
	first, err := a.Register(f.ctx, backend.Candidate{Election: election, Identity: "first", TTL: testTTL}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Withdraw(f.ctx); err != nil { // the registry's znodes exist
		t.Fatal(err)
	}
	da.dropCreate.Store(true) // the next create's reply is lost with its connection
	c := backend.Candidate{Election: election, Identity: "alice", TTL: testTTL}
	reg, err := a.Register(f.ctx, c, false)
	if da.dropCreate.Load() {
		t.Fatal("no create request went out")
	}
	if err != nil { // as the Elector does
		t.Logf("Register with its reply lost: %v; registering again", err)
		if reg, err = a.Register(f.ctx, c, false); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.Entries(f.ctx, election)
	if err != nil {
		t.Fatal(err)
	}
	if want := []backend.Entry{{ID: reg.ID(), Identity: "alice"}}; !slices.Equal(got, want) {
		t.Fatalf("Entries after a Register whose create reply was lost: got %+v, want %+v", got, want)
	}
}

func TestCanceledCampaignDeletesZnode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := f.backend(nil)
	election := "cancel-" + randomSuffix()
	l := f.acquire(a, election, "alice")
	ctx, cancel := context.WithCancel(f.ctx)
	ch := make(chan error, 1)
	go func() {
		_, err := a.Campaign(ctx, backend.Candidate{Election: election, Identity: "bob", TTL: testTTL})
		ch <- err
	}()
	f.awaitCandidates(election, 2, 10*time.Second, "bob queues")
	cancel()
	if err := <-ch; err != context.Canceled {
		t.Fatalf("canceled Campaign: got %v, want context.Canceled", err)
	}
	f.awaitCandidates(election, 1, 10*time.Second, "the abandoned znode is deleted")
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDigestAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	root := testPrefix + "-auth-" + randomSuffix()
	opts := &Options{
		Prefix: root,
		ACL:    zk.DigestACL(zk.PermAll, "elector", "s3cret"),
		Auth:   []Auth{{Scheme: "digest", Secret: []byte("elector:s3cret")}},
	}
	a, _ := f.backend(opts)
	b, _ := f.backend(opts)
	anon, _ := f.backend(&Options{Prefix: root})
	l := f.acquire(a, "e", "alice")
	if h, err := b.Leader(f.ctx, "e"); err != nil || h.Identity != "alice" {
		t.Fatalf("authenticated Leader: got (%+v, %v), want alice", h, err)
	}
	if _, err := anon.Leader(f.ctx, "e"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated Leader: got %v, want zk.ErrNoAuth", err)
	}
	if _, err := anon.Campaign(f.ctx, backend.Candidate{Election: "e", Identity: "mallory", TTL: testTTL}); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated Campaign: got %v, want zk.ErrNoAuth", err)
	}
	ch := f.campaignAsync(b, "e", "bob")
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	r := f.await(ch, 10*time.Second, "an authenticated candidate is handed the election")
	if err := r.l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	// The containers vanish once empty; delete them now to keep the tree tidy.
	f.admin.AddAuth("digest", []byte("elector:s3cret"))
	f.admin.Delete(root+"/e", -1)
	f.admin.Delete(root, -1)
}

// slogRecorder is a slog.Handler that records messages.
type slogRecorder struct {
	mu    sync.Mutex
	msgs  []string
	added chan struct{} // closed by the next record; nil until next asks
}

func (r *slogRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *slogRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, rec.Level.String()+" "+rec.Message)
	if r.added != nil {
		close(r.added)
		r.added = nil
	}
	r.mu.Unlock()
	return nil
}
func (r *slogRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *slogRecorder) WithGroup(string) slog.Handler      { return r }

func (r *slogRecorder) has(s string) bool {
	ok, _ := r.next(s)
	return ok
}

// next reports whether a message contains s and, if none does, returns a
// channel that the next record closes.
func (r *slogRecorder) next(s string) (bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if strings.Contains(m, s) {
			return true, nil
		}
	}
	if r.added == nil {
		r.added = make(chan struct{})
	}
	return false, r.added
}

// await waits for a message containing s, failing t after d.
func (r *slogRecorder) await(t *testing.T, d time.Duration, s, rule string) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		ok, added := r.next(s)
		if ok {
			return
		}
		select {
		case <-added:
		case <-deadline.C:
			t.Fatalf("no message containing %q within %v: %s", s, d, rule)
		}
	}
}

func TestUnreachableEnsemble(t *testing.T) {
	t.Parallel()
	rec := &slogRecorder{}
	b, err := New([]string{"127.0.0.1:1"}, &Options{Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Once go-zookeeper has tried every server, calls fail with the reason
	// rather than wait out their ctx.
	if _, err := b.Leader(ctx, "x"); !errors.Is(err, zk.ErrNoServer) {
		t.Fatalf("Leader with no server reachable: got %v, want zk.ErrNoServer", err)
	}
	_, err = b.Campaign(ctx, backend.Candidate{Election: "x", Identity: "alice", TTL: testTTL})
	if !errors.Is(err, zk.ErrNoServer) || backend.IsPermanent(err) {
		t.Fatalf("Campaign with no server reachable: got %v, want zk.ErrNoServer, transient", err)
	}
	rec.await(t, 5*time.Second, "WARN failed to connect",
		"go-zookeeper's messages go to Options.Logger, not standard output")
	b.Close()
	if _, err := b.Leader(context.Background(), "x"); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("Leader after Close: got %v, want ErrClosed", err)
	}
}

func TestDisconnectGraceChecksZnode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A grace of 10 s, and a term twice that, so that a loaded machine's slow
	// reconnection is still told apart from the grace running out.
	const grace = 10 * time.Second
	a, da := f.backend(&Options{Prefix: testPrefix, DisconnectGrace: grace})
	election := "grace-gone-" + randomSuffix()
	l := f.acquireFor(a, election, "alice", 2*grace)
	da.setCut(true)
	// While alice is cut off, an operator deletes her znode; then her
	// connection breaks and she reconnects at once, well inside the grace.
	if err := f.admin.Delete(l.path, -1); err != nil {
		t.Fatal(err)
	}
	da.drop()
	da.setCut(false)
	awaitLost(t, l, grace/2,
		"a lease whose znode vanished during a disconnection is lost on reconnection, before the grace ends")
	if err := l.Renew(f.ctx); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Renew: got %v, want ErrLost", err)
	}
}

func TestWatchEndsWithSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, da := f.backend(nil)
	election := "watch-expiry-" + randomSuffix()
	l := f.acquire(a, election, "alice")
	seen := make(chan backend.Holder, 8)
	done := make(chan error, 1)
	go func() { done <- a.Watch(f.ctx, election, func(h backend.Holder) { seen <- h }) }()
	if h := <-seen; h.Identity != "alice" || h.Token != l.Token() {
		t.Fatalf("Watch: first call got %+v, want alice's term", h)
	}
	da.setCut(true)
	f.awaitCandidates(election, 0, 15*time.Second, "the servers expire the session")
	da.setCut(false)
	select {
	case err := <-done:
		if err == nil || errors.Is(err, context.Canceled) {
			t.Fatalf("Watch after session expiry: got %v, want an error: its watches ended", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Watch still running after its session expired, want it to return an error")
	}
}

// TestGuardAfterReleaseRace: the znode's watch reports the release's own
// delete before the delete's reply, so the watch goroutine may end the
// lease first; Release must still return only once Guard refuses the term,
// and a second Release is a no-op.
func TestGuardAfterReleaseRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, _ := f.backend(nil)
	election := "guard-race-" + randomSuffix()
	for i := range 200 {
		l := f.acquire(b, election, "alice")
		if err := l.Release(f.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Guard(election, l.Token()); !errors.Is(err, backend.ErrLost) {
			t.Fatalf("round %d: Guard after Release: got %v, want ErrLost", i, err)
		}
		if err := l.Release(f.ctx); err != nil {
			t.Fatalf("round %d: second Release: got %v, want nil", i, err)
		}
	}
}
