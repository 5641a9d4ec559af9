package promelector_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/promelector"
)

// TestMetricsFollowAnElector runs a real Elector on the memory backend
// through a term that is resigned, and checks what a scrape shows.
func TestMetricsFollowAnElector(t *testing.T) {
	b := memory.New()
	defer b.Close()
	m := promelector.New(&promelector.Options{ConstLabels: prometheus.Labels{"service": "test"}})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)

	var (
		elected = make(chan context.Context, 1)
		revoked = make(chan struct{})
		once    sync.Once
	)
	e, err := elector.New(b, "jobs", &elector.Options{
		TTL:       time.Second,
		Observer:  m.Observe,
		Logger:    slog.New(slog.DiscardHandler),
		OnElected: func(ctx context.Context, _ elector.Term) { elected <- ctx; <-ctx.Done() },
		OnRevoked: func(elector.Term, error) { once.Do(func() { close(revoked) }) },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Track(e)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	tctx := <-elected
	if got := testutil.ToFloat64(gauge(t, reg)); got != 1 {
		t.Errorf("is_leader while leading: got %v, want 1", got)
	}
	if err := e.Resign(t.Context()); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	<-tctx.Done()
	<-revoked

	want := `
# HELP elector_terms_total Terms this process started (elections won).
# TYPE elector_terms_total counter
elector_terms_total{election="jobs",service="test"} 1
# HELP elector_revocations_total Terms this process ended, by reason: resigned, preempted, lease_lost or stopped.
# TYPE elector_revocations_total counter
elector_revocations_total{election="jobs",reason="lease_lost",service="test"} 0
elector_revocations_total{election="jobs",reason="preempted",service="test"} 0
elector_revocations_total{election="jobs",reason="resigned",service="test"} 1
elector_revocations_total{election="jobs",reason="stopped",service="test"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "elector_terms_total", "elector_revocations_total"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(gauge(t, reg)); got != 0 {
		t.Errorf("is_leader after resigning: got %v, want 0", got)
	}
	n, err := testutil.GatherAndCount(reg, "elector_campaign_duration_seconds", "elector_release_duration_seconds", "elector_term_duration_seconds")
	if err != nil || n != 3 {
		t.Errorf("histogram series: got %d (%v), want 3: campaign{won}, release{ok}, term", n, err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestObserveWithoutTrack follows is_leader from the events alone, and
// classifies renewals and revocation reasons.
func TestObserveWithoutTrack(t *testing.T) {
	m := promelector.New(nil)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	term := elector.Term{Election: "a", Token: 7, Start: time.Now()}
	m.Observe(elector.Event{Kind: elector.EventCampaign, Election: "a", Took: time.Millisecond})
	m.Observe(elector.Event{Kind: elector.EventElected, Election: "a", Term: term})
	if got := testutil.ToFloat64(gauge(t, reg)); got != 1 {
		t.Errorf("is_leader after EventElected: got %v, want 1", got)
	}
	m.Observe(elector.Event{Kind: elector.EventRenew, Election: "a", Term: term, Err: errors.New("timeout")})
	m.Observe(elector.Event{Kind: elector.EventEnded, Election: "a", Term: term, Err: elector.ErrLeaseLost})
	m.Observe(elector.Event{Kind: elector.EventElected, Election: "a", Term: term})
	m.Observe(elector.Event{Kind: elector.EventEnded, Election: "a", Term: term, Err: elector.ErrPreempted})
	m.Observe(elector.Event{Kind: elector.EventKind(99), Election: "a"})
	if got := testutil.ToFloat64(gauge(t, reg)); got != 0 {
		t.Errorf("is_leader after EventEnded: got %v, want 0", got)
	}
	want := `
# HELP elector_revocations_total Terms this process ended, by reason: resigned, preempted, lease_lost or stopped.
# TYPE elector_revocations_total counter
elector_revocations_total{election="a",reason="lease_lost"} 1
elector_revocations_total{election="a",reason="preempted"} 1
elector_revocations_total{election="a",reason="resigned"} 0
elector_revocations_total{election="a",reason="stopped"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "elector_revocations_total"); err != nil {
		t.Error(err)
	}
	if n, _ := testutil.GatherAndCount(reg, "elector_renew_duration_seconds"); n != 1 {
		t.Errorf("renew series: got %d, want 1 (result=error)", n)
	}
	for err, want := range map[error]string{nil: "stopped", context.Canceled: "stopped", elector.ErrResigned: "resigned", fmt.Errorf("x: %w", elector.ErrPreempted): "preempted"} {
		if got := promelector.Reason(err); got != want {
			t.Errorf("Reason(%v): got %q, want %q", err, got, want)
		}
	}
}

// gauge returns the single is_leader series as a collector for ToFloat64.
func gauge(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "elector_is_leader" {
			if len(mf.Metric) != 1 {
				t.Fatalf("is_leader: got %d series, want 1", len(mf.Metric))
			}
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
			g.Set(mf.Metric[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatal("no elector_is_leader series")
	return nil
}
