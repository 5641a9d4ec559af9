package integration_test

// The busy-host benchmark: elections held while the host's CPUs are busy.

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	busyN   = flag.Int("busy.n", 2000, "elections held at once by BenchmarkBusyHost")
	busyFor = flag.Duration("busy.for", 5*time.Minute, "how long BenchmarkBusyHost keeps the CPUs busy")
	busyCPU = flag.Int("busy.loops", 2, "CPU-bound busy loops BenchmarkBusyHost runs beside the process")
)

// BenchmarkBusyHost holds -busy.n elections (default 2,000) as Electors,
// TTL 15 s, on each backend while -busy.loops CPU-bound processes (default
// 2, one per core of the test machines) spin beside the test process for
// -busy.for (default 5 minutes): a host busy for minutes must not cost
// any election its term. It reports the terms lost (the run fails on any),
// the renew p99 and failed renewals over the busy period, and the load
// average at its end. It is not part of make test; run it per backend:
//
//	go test -run '^$' -bench 'BenchmarkBusyHost/redlock' -benchtime 1x -timeout 30m
func BenchmarkBusyHost(b *testing.B) {
	for _, c := range scaleCases() {
		if !isElectorCase(c.name) {
			continue
		}
		b.Run(strings.TrimSuffix(c.name, "/elector"), func(b *testing.B) {
			for range b.N { // one run is the measurement; N stays 1
				runBusy(b, c)
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// runBusy holds the elections of c, starts the busy loops once all are
// held, and reports what the busy period cost.
func runBusy(b *testing.B, c scaleCase) {
	g := newScaleLedger(b, *busyN)
	ctx, cancel := context.WithTimeout(context.Background(), *busyFor+10*time.Minute)
	defer cancel()
	stop := c.hold(b, ctx, g, scaleName("busy-"+c.name), scaleTTL)
	defer func() { g.stop(); stop() }()
	select {
	case <-g.all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%s: %d of %d elections held after 5m", c.name, g.count(), *busyN)
	}
	time.Sleep(scaleTTL / 3) // the cold start's renewals settle
	g.resetRenews()
	busy := busyLoops(b, *busyCPU)
	time.Sleep(*busyFor)
	load := loadAverage()
	busy()
	p, k := g.renewP99()
	g.mu.Lock()
	failed := g.failed
	g.mu.Unlock()
	b.ReportMetric(float64(g.lostCount()), "terms-lost")
	b.ReportMetric(float64(p)/float64(time.Millisecond), "renew-p99-ms")
	b.ReportMetric(float64(failed), "renewals-failed")
	b.ReportMetric(float64(k), "renewals")
	b.ReportMetric(load, "load-1m")
	if n := g.lostCount(); n > 0 {
		b.Errorf("%s: %d terms lost on a busy host (load %.1f), want none", c.name, n, load)
	}
}

// busyLoops starts n processes that spin on a CPU each, and returns the
// function that stops them (by their PIDs) and waits for them.
func busyLoops(tb testing.TB, n int) (stop func()) {
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			tb.Fatalf("busy loop: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	return func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
}

// loadAverage returns the host's one-minute load average, or -1.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
