package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leaderkit/elector/internal/testproxy"
)

// client-go's timing in these tests: a Lease of 3 s (elector's [MinTTL]),
// or of interopLease, retried and renewed every 200 ms.
const (
	goLeaseDuration = 3 * time.Second
	goRenewDeadline = goLeaseDuration * 2 / 3
	goRetryPeriod   = 200 * time.Millisecond
)

// goCandidate is a client-go LeaderElector on a LeaseLock.
type goCandidate struct {
	id      string
	at      time.Time     // when OnStartedLeading ran; read after started is closed
	started chan struct{} // closed by OnStartedLeading
	stopped chan struct{} // closed by OnStoppedLeading
	done    chan struct{} // closed when Run returned
	cancel  context.CancelFunc
}

// runClientGo runs a client-go candidate for the Lease name until stop.
// releaseOnCancel is LeaderElectionConfig.ReleaseOnCancel.
func runClientGo(t testing.TB, cli coordinationv1client.LeasesGetter, ns, name, id string, releaseOnCancel bool) *goCandidate {
	t.Helper()
	return runClientGoFor(t, cli, ns, name, id, releaseOnCancel, goLeaseDuration)
}

// startLeaderElector runs client-go's LeaderElector of cfg, named id, with
// callbacks that record its leading in the returned candidate, until stop
// or the end of t.
func startLeaderElector(t testing.TB, id string, cfg leaderelection.LeaderElectionConfig) *goCandidate {
	t.Helper()
	g := &goCandidate{id: id, started: make(chan struct{}), stopped: make(chan struct{}), done: make(chan struct{})}
	cfg.Name = id
	cfg.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) { g.at = time.Now(); close(g.started) },
		OnStoppedLeading: func() { close(g.stopped) },
	}
	le, err := leaderelection.NewLeaderElector(cfg)
	if err != nil {
		t.Fatalf("NewLeaderElector: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	go func() {
		defer close(g.done)
		le.Run(ctx)
	}()
	t.Cleanup(g.stop)
	return g
}

// interopLease is the longer Lease duration of the interop tests that tell a
// take-over at a release or an expiry apart from one much later.
const interopLease = 10 * time.Second

// runClientGoFor is runClientGo with a LeaseDuration of d, and a
// RenewDeadline of 2/3 of it.
func runClientGoFor(t testing.TB, cli coordinationv1client.LeasesGetter, ns, name, id string, releaseOnCancel bool, d time.Duration) *goCandidate {
	t.Helper()
	return startLeaderElector(t, id, leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: ns},
			Client:     cli,
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   d,
		RenewDeadline:   d * 2 / 3,
		RetryPeriod:     goRetryPeriod,
		ReleaseOnCancel: releaseOnCancel,
	})
}

// runClientGoT runs a client-go candidate (ReleaseOnCancel) for the Lease
// name on a client of its own.
func runClientGoT(t testing.TB, s server, name, id string) *goCandidate {
	t.Helper()
	return runClientGo(t, s.client(t), s.ns, name, id, true)
}

// stop cancels the candidate and waits for Run to return.
func (g *goCandidate) stop() {
	g.cancel()
	<-g.done
}

// leads waits up to d for the candidate to start leading.
func (g *goCandidate) leads(d time.Duration) bool {
	select {
	case <-g.started:
		return true
	case <-time.After(d):
		return false
	}
}

// renewEvery renews l every d until the returned stop is called; it fails t
// on an error.
func renewEvery(t *testing.T, l *lease, d time.Duration) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if err := l.Renew(context.Background()); err != nil {
					t.Errorf("Renew: %v", err)
					return
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

// A client-go candidate waits while an elector lease is held and renewed,
// takes the Lease over within about one RetryPeriod of the release, and
// increments the transitions count the elector token is.
func TestInteropClientGoWaitsForElector(t *testing.T) {
	t.Parallel() // a Lease of its own; bounds of seconds beside a 10 s lease
	s := testServer(t)
	b := testBackend(t, s, nil)
	name := testName(t)
	// A TTL long beside client-go's RetryPeriod: had the release not
	// freed the Lease, client-go would take it over at its expiry, at
	// least 3/4 of the TTL after the release, well after the bound below.
	const ttl = interopLease
	l := mustCampaign(t, b, backendCand(name, "elector-a", ttl))
	stop := renewEvery(t, l, ttl/4)
	g := runClientGo(t, s.client(t), s.ns, name, "client-go-b", true)
	if g.leads(ttl + time.Second) {
		t.Fatalf("client-go started leading while the elector lease was held and renewed; want it waiting")
	}
	stop()
	released := time.Now()
	if err := l.Release(testCtx(t)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if within := 2*goRetryPeriod + 5*time.Second; !g.leads(within) {
		t.Fatalf("client-go did not lead within %v of the elector's Release", within)
	}
	t.Logf("client-go took over %v after the release", time.Since(released))
	h, err := b.Leader(testCtx(t), name)
	if err != nil || h.Identity != "client-go-b" || h.Token != l.Token()+1 {
		t.Fatalf("Leader: got (%+v, %v), want client-go-b with token %d (client-go increments leaseTransitions on a change of holder)", h, err, l.Token()+1)
	}
}

// An elector candidate waits while a client-go LeaderElector leads, and
// takes the Lease over as soon as client-go releases it (ReleaseOnCancel),
// with a token above client-go's transitions count.
func TestInteropElectorWaitsForClientGo(t *testing.T) {
	t.Parallel() // a Lease of its own; bounds of seconds beside a 10 s lease
	s := testServer(t)
	b := testBackend(t, s, nil)
	name := testName(t)
	// A LeaseDuration long beside a take-over on the release: had the
	// elector missed it, it would take the Lease at its expiry, about
	// 10 s after, well after the bound below.
	g := runClientGoFor(t, s.client(t), s.ns, name, "client-go-a", true, interopLease)
	if !g.leads(10 * time.Second) {
		t.Fatal("client-go did not lead a free Lease")
	}
	h, err := b.Leader(testCtx(t), name)
	if err != nil || h.Identity != "client-go-a" {
		t.Fatalf("Leader: got (%+v, %v), want client-go-a", h, err)
	}
	ch := campaignAsync(testCtx(t), b, cand(name, "elector-b"))
	pending(t, ch, interopLease+500*time.Millisecond) // longer than the Lease: client-go renews it
	stopped := time.Now()
	g.stop()
	r := await(t, ch, 5*time.Second)
	if r.err != nil {
		t.Fatalf("Campaign after client-go released: %v", r.err)
	}
	t.Logf("elector took over %v after client-go was stopped", r.at.Sub(stopped))
	if r.l.Token() <= h.Token {
		t.Errorf("token after client-go's term: got %d, want > %d", r.l.Token(), h.Token)
	}
	if err := r.l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// When client-go's holder stops without releasing (cut off from the
// apiserver), an elector candidate takes the Lease over once client-go's
// leaseDurationSeconds have passed since it last saw the record change —
// not before.
func TestInteropClientGoExpires(t *testing.T) {
	t.Parallel() // a Lease and a proxy of its own; its bound allows 8 s for margins and load
	s := testServer(t)
	b := testBackend(t, s, nil)
	name := testName(t)
	p := testproxy.New(t, s.addr())
	// A LeaseDuration long beside the margins of the elector's judgment
	// and a loaded machine's delays: a take-over at twice the
	// LeaseDuration is told apart from one at the LeaseDuration.
	g := runClientGoFor(t, s.via(t, p.Addr()), s.ns, name, "client-go-a", false, interopLease)
	if !g.leads(10 * time.Second) {
		t.Fatal("client-go did not lead a free Lease")
	}
	ch := campaignAsync(testCtx(t), b, cand(name, "elector-b"))
	pending(t, ch, 500*time.Millisecond)
	p.Cut() // client-go's renewals stop reaching the apiserver
	cut := time.Now()
	// About the LeaseDuration after the cut; 8 s more for the margins of a
	// judgment on the apiserver's clock and a loaded machine.
	r := await(t, ch, interopLease+8*time.Second)
	if r.err != nil {
		t.Fatalf("Campaign after client-go was cut off: %v", r.err)
	}
	after := r.at.Sub(cut)
	t.Logf("elector took over %v after client-go was cut off", after)
	if after < interopLease-goRetryPeriod*2 {
		t.Errorf("elector took over %v after client-go's last possible renewal, want at least about its lease duration %v", after, interopLease)
	}
	g.stop()
	if err := r.l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// When an elector holder stops renewing (cut off), client-go takes the
// Lease over after the elector's leaseDurationSeconds, and never before the
// elector lease's Deadline — although client-go sees a change of the record
// only when its renewTime moves to another whole second (it compares the
// record as JSON, where times are whole seconds), and the holder renews
// several times a second.
func TestInteropElectorExpires(t *testing.T) {
	t.Parallel() // a Lease and proxies of its own; its bound allows 7 s for margins and load
	s := testServer(t)
	b, p := proxiedBackend(t, s)
	name := testName(t)
	// A TTL long beside a loaded machine's delays: client-go taking over
	// at twice the TTL is told apart from taking over at the TTL.
	const ttl = interopLease
	l := mustCampaign(t, b, backendCand(name, "elector-a", ttl))
	g := runClientGo(t, s.client(t), s.ns, name, "client-go-b", true)
	stop := renewEvery(t, l, 150*time.Millisecond)
	if g.leads(ttl + time.Second) {
		t.Fatal("client-go led while the elector lease was renewed")
	}
	stop()
	p.Cut()
	deadline := l.Deadline()
	if within := ttl + 7*time.Second; !g.leads(within) {
		t.Fatalf("client-go did not take over an expired elector lease within %v", within)
	}
	if early := deadline.Sub(g.at); early > 0 {
		t.Fatalf("client-go led %v before the elector lease's Deadline; want after it", early)
	}
	t.Logf("client-go led %v after the elector lease's Deadline", g.at.Sub(deadline))
}

// Elector candidates and client-go LeaderElectors campaign for one Lease
// together, each leading briefly and then releasing, through dozens of
// hand-overs in both directions: their leaderships never overlap.
func TestInteropMixedExclusion(t *testing.T) {
	t.Parallel() // a Lease of its own
	s := testServer(t)
	name := testName(t)
	rec := &upgradeLog{open: make(map[string]time.Time), changed: make(chan struct{})}
	const (
		hold = 150 * time.Millisecond
		// The run lasts minRun at least (alone it sees about 30
		// leaderships in that time), and until each kind has led want
		// times: a minute at most.
		minRun = 12 * time.Second
		want   = 3
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-time.After(minRun):
		case <-ctx.Done():
			return
		}
		for {
			rec.mu.Lock()
			elector := 0
			for _, l := range rec.got {
				if strings.HasPrefix(l.who, "elector") {
					elector++
				}
			}
			other, changed := len(rec.got)-elector, rec.changed
			rec.mu.Unlock()
			if elector >= want && other >= want {
				cancel()
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	})
	for i := range 2 {
		who := fmt.Sprintf("elector-%d", i)
		b := testBackend(t, s, nil)
		wg.Go(func() {
			for ctx.Err() == nil {
				l, err := b.Campaign(ctx, cand(name, who))
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("%s: Campaign: %v", who, err)
					}
					return
				}
				term, end := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); rec.lead(term, who) }()
				<-time.After(hold)
				end()
				<-done
				if err := l.Release(context.Background()); err != nil {
					t.Errorf("%s: Release: %v", who, err)
					return
				}
				// Sit out a few RetryPeriods: elector's waiters, woken by
				// the watch, would otherwise win every release before a
				// polling client-go candidate looks.
				<-time.After(3 * goRetryPeriod)
			}
		})
	}
	for i := range 2 {
		who := fmt.Sprintf("client-go-%d", i)
		cli := s.client(t)
		wg.Go(func() {
			for ctx.Err() == nil {
				led := make(chan struct{})
				lock := &resourcelock.LeaseLock{
					LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: s.ns},
					Client:     cli,
					LockConfig: resourcelock.ResourceLockConfig{Identity: who},
				}
				run, stop := context.WithCancel(ctx)
				le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
					Lock: lock, Name: who, ReleaseOnCancel: true,
					LeaseDuration: goLeaseDuration, RenewDeadline: goRenewDeadline, RetryPeriod: goRetryPeriod,
					Callbacks: leaderelection.LeaderCallbacks{
						OnStartedLeading: func(term context.Context) {
							close(led)
							go func() { <-time.After(hold); stop() }()
							rec.lead(term, who)
						},
						OnStoppedLeading: func() {},
					},
				})
				if err != nil {
					t.Errorf("NewLeaderElector: %v", err)
					stop()
					return
				}
				le.Run(run) // returns once it led and released, or ctx ended
				stop()
			}
		})
	}
	wg.Wait()
	rec.mu.Lock()
	got := slices.Clone(rec.got)
	rec.mu.Unlock()
	slices.SortFunc(got, func(a, b leadership) int { return a.start.Compare(b.start) })
	kinds := map[bool]int{}
	for i, l := range got {
		kinds[strings.HasPrefix(l.who, "elector")]++
		if i > 0 && l.start.Before(got[i-1].end) {
			t.Errorf("%s led from %v, %v before %s stopped: two leaders", l.who, l.start.Format(time.StampMicro), got[i-1].end.Sub(l.start), got[i-1].who)
		}
	}
	t.Logf("%d leaderships: %d elector, %d client-go", len(got), kinds[true], kinds[false])
	if kinds[true] < want || kinds[false] < want {
		t.Errorf("got %d elector and %d client-go leaderships within a minute, want %d of each", kinds[true], kinds[false], want)
	}
}
