package integration_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/etcd"
	"github.com/leaderkit/elector/internal/testenv"
)

// etcdTTL is the lease TTL of the etcd tests and benchmarks: the 2 s of
// shared/notes/anchor-figures.md, so the figures compare.
const etcdTTL = 2 * time.Second

// etcdClient returns a quiet client on endpoints, closed at the end of tb.
func etcdClient(tb testing.TB, endpoints ...string) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// etcdBackend returns an elector etcd Backend on cli, closed at the end of tb.
func etcdBackend(tb testing.TB, cli *clientv3.Client) *etcd.Backend {
	tb.Helper()
	b, err := etcd.New(cli, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// etcdName returns an election name unique to this run.
func etcdName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "etcd-it/" + prefix + "-" + hex.EncodeToString(b[:])
}

// etcdCtx returns a watchdog context for tb.
func etcdCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// raftLeader returns the 1-based member number (for testenv.Fault) of the
// etcd cluster's raft leader.
func raftLeader(t *testing.T, cli *clientv3.Client, endpoints []string) int {
	t.Helper()
	for i, ep := range endpoints {
		ctx, cancel := context.WithTimeout(etcdCtx(t), 2*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Header.MemberId == st.Leader {
			return i + 1
		}
	}
	t.Fatal("no etcd member reports itself raft leader")
	return 0
}

// termLog records the terms of several in-process electors on one
// monotonic clock.
type termLog struct {
	mu      sync.Mutex
	terms   []loggedTerm
	elected chan loggedTerm // every election, as it happens
	ended   chan loggedTerm // every step-down, as it happens
}

type loggedTerm struct {
	who        string
	token      uint64
	start, end time.Time // OnElected called; its ctx ended (zero while leading)
}

func newTermLog() *termLog {
	return &termLog{elected: make(chan loggedTerm, 64), ended: make(chan loggedTerm, 64)}
}

// elector returns an Elector for election on b that records its terms.
func (tl *termLog) elector(t *testing.T, b *etcd.Backend, election, who string) *elector.Elector {
	t.Helper()
	e, err := elector.New(b, election, &elector.Options{
		Identity: who,
		TTL:      etcdTTL,
		Logger:   etcdLogger(t),
		OnElected: func(ctx context.Context, term elector.Term) {
			lt := loggedTerm{who: who, token: term.Token, start: time.Now()}
			tl.elected <- lt
			<-ctx.Done()
			lt.end = time.Now()
			tl.mu.Lock()
			tl.terms = append(tl.terms, lt)
			tl.mu.Unlock()
			tl.ended <- lt
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// checkNoOverlap fails t if two recorded terms overlap or tokens do not
// increase in the order of election.
func (tl *termLog) checkNoOverlap(t *testing.T) {
	t.Helper()
	tl.mu.Lock()
	terms := slices.Clone(tl.terms)
	tl.mu.Unlock()
	slices.SortFunc(terms, func(a, b loggedTerm) int { return a.start.Compare(b.start) })
	for i := 1; i < len(terms); i++ {
		p, c := terms[i-1], terms[i]
		if c.start.Before(p.end) {
			t.Errorf("terms overlap: %s (token %d) elected %v before %s (token %d) stepped down", c.who, c.token, p.end.Sub(c.start), p.who, p.token)
		}
		if c.token <= p.token {
			t.Errorf("tokens: %s got %d after %s's %d, want greater", c.who, c.token, p.who, p.token)
		}
	}
}

// runElector runs e until the test ends.
func runElector(t *testing.T, e *elector.Elector) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	})
}

// waitTerm waits up to d for the next election or step-down on ch.
func waitTerm(t *testing.T, ch <-chan loggedTerm, d time.Duration, what string) loggedTerm {
	t.Helper()
	select {
	case lt := <-ch:
		return lt
	case <-time.After(d):
		t.Fatalf("no %s within %v", what, d)
		return loggedTerm{}
	}
}

// etcdEndpoints returns the endpoints of the three-member test cluster.
func etcdEndpoints(t testing.TB) []string { return testenv.EtcdEndpoints(t) }

// etcdLogger returns a logger writing to t's log until t ends.
func etcdLogger(t *testing.T) *slog.Logger {
	l := testenv.NewLogger(t)
	return slog.New(slog.NewTextHandler(logWriter{l}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type logWriter struct{ l *testenv.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Printf("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// etcdBackendNoCleanup returns a Backend on cli that the caller closes.
func etcdBackendNoCleanup(cli *clientv3.Client) *etcd.Backend {
	b, err := etcd.New(cli, nil)
	if err != nil {
		panic(err) // only for invalid options; there are none
	}
	return b
}

// etcdLatencies collects durations and reports their percentiles.
type etcdLatencies []time.Duration

// report adds p50 and p99 (in ms) of ls to b's metrics, under name.
func (ls etcdLatencies) report(b *testing.B, name string) {
	if len(ls) == 0 {
		return
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	pct := func(p float64) float64 {
		return float64(s[int(p*float64(len(s)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), name+"-p50-ms")
	b.ReportMetric(pct(0.99), name+"-p99-ms")
}
