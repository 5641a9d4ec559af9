//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/promelector"
)

// metricsServer serves /metrics and /healthz.
type metricsServer struct {
	srv *http.Server
	wg  sync.WaitGroup
}

// serveMetrics listens on addr and serves, in the background, the
// elector's metrics with Go's and the process's, and /healthz from
// e.Check: 200 "ok", or 503 with the reason (among them: campaigning has
// failed for longer than the TTL, with the last error).
func serveMetrics(addr string, m *promelector.Metrics, e *elector.Elector, log *slog.Logger) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := e.Check(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &metricsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	log.Info("serving metrics", "addr", ln.Addr().String())
	s.wg.Go(func() {
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server failed", "error", err)
		}
	})
	return s, nil
}

// close stops the server, letting scrapes in flight finish for a second.
func (s *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	s.wg.Wait()
}
