package promelector_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/promelector"
)

// An elector's terms as Prometheus metrics: while it leads, is_leader is 1
// and one term has started.
func Example() {
	store := memory.New()
	defer store.Close()
	m := promelector.New(nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	ctx, cancel := context.WithCancel(context.Background())
	leading := make(chan struct{})
	e, _ := elector.New(store, "jobs", &elector.Options{
		Observer:  m.Observe,
		Logger:    slog.New(slog.DiscardHandler),
		OnElected: func(context.Context, elector.Term) { close(leading) },
	})
	m.Track(e)
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()
	<-leading

	families, _ := reg.Gather()
	for _, f := range families {
		switch f.GetName() {
		case "elector_is_leader":
			fmt.Println(f.GetName(), f.GetMetric()[0].GetGauge().GetValue())
		case "elector_terms_total":
			fmt.Println(f.GetName(), f.GetMetric()[0].GetCounter().GetValue())
		}
	}
	cancel()
	<-done
	// Output:
	// elector_is_leader 1
	// elector_terms_total 1
}
