package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leaderkit/elector/backend"
)

// TestClockExpiry checks the arithmetic of a judgment on the apiserver's
// clock: the holder of a record last stamped at W, of duration d, has
// stopped by W + 1 s (the stamp's resolution) + d + serverSkew on the
// apiserver's clock, carried to this process's clock through a sample.
func TestClockExpiry(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	local := time.Now()
	lease := func(secs int32, times ...time.Time) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		l.CreationTimestamp = metav1.NewTime(base.Add(-time.Hour))
		l.Spec.LeaseDurationSeconds = &secs
		for _, at := range times {
			l.ManagedFields = append(l.ManagedFields, metav1.ManagedFieldsEntry{Manager: "m", Time: new(metav1.NewTime(at))})
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		l      *coordinationv1.Lease
		server time.Time // the sample: the apiserver's clock at local
		want   time.Duration
		ok     bool
	}{
		{"sampled at the end", lease(3, base), base.Add(5 * time.Second), 0, true},
		{"sampled at the write", lease(3, base), base, 5 * time.Second, true},
		{"the latest stamp counts", lease(3, base, base.Add(2*time.Second), base.Add(time.Second)), base.Add(7 * time.Second), 0, true},
		{"sampled later", lease(10, base), base.Add(20 * time.Second), -8 * time.Second, true},
		{"no stamps", lease(3), base, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := clockSample{server: tc.server, at: local}
			got, ok := s.expiry(tc.l, 0)
			if ok != tc.ok || ok && got.Sub(local) != tc.want {
				t.Fatalf("expiry: got %v after the sample (ok %v), want %v (ok %v)", got.Sub(local), ok, tc.want, tc.ok)
			}
		})
	}
	// The drift allowance only ever postpones the verdict.
	s := clockSample{server: base, at: local}
	got, _ := s.expiry(lease(3, base), 0.01)
	if want := 5*time.Second + 50*time.Millisecond; got.Sub(local) != want {
		t.Errorf("expiry with DriftFactor 0.01: got %v after the sample, want %v", got.Sub(local), want)
	}
}

// TestExpiryLagCoversWorstCase: an entry written on a whole second, read
// through a Date header sampled just before the next one, is listed until
// its TTL plus two grains and serverSkew after its write, before any
// latency: the harness's ExpiryLag is that margin, so the conformance
// suite's own allowance (3 TTL + 1 s after a crash) is left for the
// latency of the clock sample, the List and its polling. At a 1 s TTL that
// allowance alone is the worst case exactly, and a loaded CI machine went
// past it.
func TestExpiryLagCoversWorstCase(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	write := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	trueAt := write.Add(10*time.Second - time.Millisecond) // Date: write + 9 s
	local := time.Now()
	s := clockSample{server: trueAt.Truncate(time.Second), at: local}
	listed := s.expiryAt(write, ttl, 0).Sub(local.Add(write.Sub(trueAt)))
	lag := (&harness{}).ExpiryLag()
	if want := ttl + lag; listed > want || listed < want-time.Millisecond {
		t.Errorf("worst case: listed %v after the write, want %v (the TTL and ExpiryLag %v, less the sample's last millisecond)", listed, want, lag)
	}
}

// TestClockSampleOutlivesFailedRetake: when a sample of the apiserver's
// clock cannot be retaken, the last one serves (up to clockStale) and the
// next attempt waits clockRetry, instead of leaving every reader without a
// judgment, and so every crashed holder or entry live, for clockMaxAge.
func TestClockSampleOutlivesFailedRetake(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		fail := false
		c := &serverClock{}
		c.fetch = func(context.Context) (clockSample, error) {
			if fail {
				return clockSample{}, errors.New("no answer")
			}
			return clockSample{server: time.Now().UTC(), at: time.Now()}, nil
		}
		b := &Backend{clock: c, cfg: config{request: time.Second}}
		look := func(when string, wantOK bool, wantAt time.Time, wantTaken int64) {
			t.Helper()
			s, ok := b.sample(ctx)
			if ok != wantOK || ok && !s.at.Equal(wantAt) || c.taken.Load() != wantTaken {
				t.Fatalf("%s: got a sample taken at %v (ok %v) after %d requests; want one taken at %v (ok %v) after %d",
					when, s.at, ok, c.taken.Load(), wantAt, wantOK, wantTaken)
			}
		}
		first := time.Now()
		look("first look", true, first, 1)
		time.Sleep(clockMaxAge)
		fail = true
		look("retake failed", true, first, 2)
		look("within clockRetry of the failure", true, first, 2)
		time.Sleep(clockRetry)
		look("clockRetry after the failure", true, first, 3)
		fail = false
		time.Sleep(clockRetry)
		second := time.Now()
		look("answered again", true, second, 4)
		fail = true
		time.Sleep(clockStale)
		look("older than clockStale", false, time.Time{}, 5)
	})
}

// writeHolder creates the Lease name naming holder for secs seconds, as a
// holder that then crashes leaves it, and returns when the create was sent.
func writeHolder(t *testing.T, s server, name, holder string, secs int32) time.Time {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &holder, &secs
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	l.Spec.LeaseTransitions = new(int32(1))
	sent := time.Now()
	if _, err := s.client(t).Leases(s.ns).Create(testCtx(t), l, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating lease %s: %v", name, err)
	}
	return sent
}

// crashedSecs is the duration of a crashed holder's Lease in the clock
// tests: long beside the margins, so that a reader that waits twice the
// duration is told apart.
const crashedSecs = 10

// writeCrashed writes the Lease name as a holder that then crashes leaves
// it, for crashedSecs, and returns when the write was sent and by when a
// reader must report the holder gone: stamps and Date headers are whole
// seconds, and a reader allows serverSkew, so within the duration + 3 s of
// the write, plus 5 s for the write and the reads on a loaded machine.
func writeCrashed(t *testing.T, s server, name string) (sent, bound time.Time) {
	t.Helper()
	sent = writeHolder(t, s, name, "crashed", crashedSecs)
	return sent, sent.Add(crashedSecs*time.Second + 3*time.Second + 5*time.Second)
}

// TestOneLookSeesCrashedHolderExpire: a holder that stopped without
// releasing is reported gone by a Backend that reads the Lease once (a new
// process: elect status, run --once, a partition reading), about its
// duration after its last write, and never before the duration has passed.
// Each look uses a new Backend, which reads the Lease once.
func TestOneLookSeesCrashedHolderExpire(t *testing.T) {
	t.Parallel() // a Lease of its own; its bound allows 5 s for a loaded machine
	s := testServer(t)
	name, other := testName(t), testName(t)
	const d = crashedSecs * time.Second
	sent, bound := writeCrashed(t, s, name)
	cli := s.client(t)
	// A Backend that cannot judge from one look never reports it gone.
	var gone time.Time
	looks := time.NewTicker(200 * time.Millisecond) // the looks of new processes
	defer looks.Stop()
	for gone.IsZero() {
		b, err := New(cli, s.ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		look := time.Now()
		h, err := b.Leader(testCtx(t), name)
		_ = b.Close()
		switch {
		case errors.Is(err, backend.ErrNoLeader):
			if look.Before(sent.Add(d)) {
				t.Fatalf("a new Backend reported the holder gone %v after its write; want not before its duration %v", look.Sub(sent), d)
			}
			gone = look
		case err != nil:
			t.Fatalf("Leader: %v", err)
		case h.Identity != "crashed":
			t.Fatalf("Leader: got %+v, want the holder crashed", h)
		case time.Now().After(bound.Add(5 * time.Second)):
			t.Fatalf("a new Backend still reports the holder %v after its last write (duration %v): %+v", time.Since(sent).Round(time.Millisecond), d, h)
		}
		if gone.IsZero() {
			<-looks.C
		}
	}
	t.Logf("a new Backend first reported the crashed holder gone %v after its write (duration %v)", gone.Sub(sent).Round(time.Millisecond), d)
	if gone.After(bound) {
		t.Errorf("a new Backend first reported the holder gone %v after its write; want within %v", gone.Sub(sent).Round(time.Millisecond), bound.Sub(sent))
	}

	b := testBackend(t, s, nil)
	hs, errs := b.Leaders(testCtx(t), []string{name, other})
	for i, e := range []string{name, other} {
		if !errors.Is(errs[i], backend.ErrNoLeader) {
			t.Errorf("Leaders of a new Backend, %s: got %+v, %v; want no leader", e, hs[i], errs[i])
		}
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	first := make(chan backend.Holder, 1)
	err := testBackend(t, s, nil).Watch(ctx, name, func(h backend.Holder) {
		first <- h
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch: got %v, want context.Canceled", err)
	}
	if h := <-first; !h.IsZero() {
		t.Errorf("the first report of a new Backend's Watch: got %+v, want no holder", h)
	}
}

// TestOneLookNeverDropsLiveHolder: a holder that keeps renewing is reported
// by every new Backend that looks, and taken by none that campaigns,
// however its renewals fall between the whole seconds of the apiserver's
// stamps. It runs alone: its looks, ten a second, each list the namespace's
// Leases (a new Backend's Campaign starts its watch), and its holder of a
// 3 s lease must have every renewal answered within about 2 s.
func TestOneLookNeverDropsLiveHolder(t *testing.T) {
	s := testServer(t)
	name := testName(t)
	holder := testBackend(t, s, nil)
	l := mustCampaign(t, holder, cand(name, "live"))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	renewed := make(chan error, 1)
	go func() {
		tk := time.NewTicker(testTTL / 3)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				renewed <- nil
				return
			case <-tk.C:
				if err := l.Renew(ctx); err != nil && ctx.Err() == nil {
					renewed <- err
					return
				}
			}
		}
	}()
	cli := s.client(t)
	end := time.Now().Add(3 * testTTL)
	looks := 0
	tk := time.NewTicker(100 * time.Millisecond) // the looks of new processes
	defer tk.Stop()
	for time.Now().Before(end) {
		b, err := New(cli, s.ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := b.Leader(ctx, name)
		if err != nil || h.Identity != "live" {
			if time.Now().Before(l.Deadline()) {
				t.Fatalf("look %d: a new Backend reported %+v, %v while the holder's Deadline is %v away; want the holder live", looks, h, err, time.Until(l.Deadline()).Round(time.Millisecond))
			}
		}
		// A new process's Campaign, given as long as a look, never takes it.
		cctx, ccancel := context.WithTimeout(ctx, 50*time.Millisecond)
		if _, err := b.Campaign(cctx, cand(name, "firing")); err == nil {
			t.Fatalf("look %d: a new Backend's Campaign took the Lease of a holder renewing every %v", looks, testTTL/3)
		}
		ccancel()
		_ = b.Close()
		looks++
		<-tk.C
	}
	cancel()
	if err := <-renewed; err != nil {
		t.Fatalf("Renew: %v", err)
	}
	t.Logf("%d looks over %v", looks, 3*testTTL)
}

// TestMissingNamespace: Leader and Leaders in a namespace that does not
// exist name it in their error, instead of reporting no leader as for an
// election never held.
func TestMissingNamespace(t *testing.T) {
	t.Parallel()
	s := testServer(t)
	b, err := New(s.client(t), "elector-no-such-namespace", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	name := testName(t)
	_, err = b.Leader(testCtx(t), name)
	if err == nil || errors.Is(err, backend.ErrNoLeader) || !strings.Contains(err.Error(), `namespace "elector-no-such-namespace" does not exist`) {
		t.Errorf("Leader: got %v; want an error naming the missing namespace", err)
	}
	_, errs := b.Leaders(testCtx(t), []string{name, name + "-2"})
	for _, err := range errs {
		if err == nil || errors.Is(err, backend.ErrNoLeader) || !strings.Contains(err.Error(), `namespace "elector-no-such-namespace" does not exist`) {
			t.Errorf("Leaders: got %v; want an error naming the missing namespace", err)
		}
	}
	// The namespace of the tests exists: an election never held has no
	// leader there.
	if _, err := testBackend(t, s, nil).Leader(testCtx(t), name); !errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("Leader in namespace %s: got %v; want no leader", s.ns, err)
	}
}

// TestOneCampaignTakesCrashedHolder: Campaigns of new processes, each
// given a second (a cron firing's short wait), take the Lease of a holder
// that stopped writing once the apiserver's clock shows its duration
// passed (within the stamps' margins), never before it, without one of
// them watching the Lease for a whole duration. It runs alone: the second
// each Campaign is given covers its new Backend's list of the namespace's
// Leases, as well as the take-over.
func TestOneCampaignTakesCrashedHolder(t *testing.T) {
	s := testServer(t)
	name := testName(t)
	const d = crashedSecs * time.Second
	sent, bound := writeCrashed(t, s, name)
	cli := s.client(t)
	tries := time.NewTicker(200 * time.Millisecond)
	defer tries.Stop()
	for {
		b, err := New(cli, s.ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		try := time.Now()
		// A reader's expiry comes more than 1 s after the write plus the
		// duration: a try of a second that took the Lease started after
		// the duration had passed.
		ctx, cancel := context.WithTimeout(testCtx(t), time.Second)
		l, err := b.Campaign(ctx, cand(name, "firing"))
		cancel()
		if err == nil {
			if try.Before(sent.Add(d)) {
				t.Fatalf("a new Backend took the Lease %v after the holder's last write; want not before its duration %v", try.Sub(sent), d)
			}
			if tok := l.Token(); tok != 2 {
				t.Errorf("token %d; want 2, one above the crashed holder's", tok)
			}
			_ = l.Release(testCtx(t))
			_ = b.Close()
			t.Logf("a Campaign of a new Backend took the Lease %v after the crashed holder's write (duration %v)", try.Sub(sent).Round(time.Millisecond), d)
			if try.After(bound) {
				t.Errorf("first taken by a Campaign started %v after the write; want within %v", try.Sub(sent).Round(time.Millisecond), bound.Sub(sent))
			}
			return
		}
		_ = b.Close()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Campaign: %v", err)
		}
		if time.Now().After(bound.Add(5 * time.Second)) {
			t.Fatalf("no Campaign of a new Backend took the Lease within %v of the holder's last write (duration %v)", time.Since(sent).Round(time.Millisecond), d)
		}
		<-tries.C
	}
}
