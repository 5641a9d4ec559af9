package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/internal/testproxy"
)

// testTTL is the lease TTL the tests campaign with: the shortest the
// driver accepts by default, when client-go candidates may share the Lease.
const testTTL = MinTTL

// server is the test apiserver: the client configuration of ELECTOR_KUBE_URL
// (without client-side rate limit) and its namespace.
type server struct {
	cfg *rest.Config
	ns  string
}

func testServer(t testing.TB) server {
	t.Helper()
	raw := testenv.KubeURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("ELECTOR_KUBE_URL %q: %v", raw, err)
	}
	cfg, ns, _, err := parseURL(u)
	if err != nil {
		t.Fatalf("ELECTOR_KUBE_URL %q: %v", raw, err)
	}
	cfg.QPS = -1 // no client-side rate limit: the tests hand elections over hundreds of times
	return server{cfg: cfg, ns: ns}
}

// addr returns the apiserver's host:port.
func (s server) addr() string { return strings.TrimPrefix(s.cfg.Host, "https://") }

// via returns a client reaching the apiserver at addr (a proxy in front of it).
func (s server) via(t testing.TB, addr string) *coordinationv1client.CoordinationV1Client {
	t.Helper()
	return s.clientFor(t, addr, nil)
}

// loggedVia is via with a client that records its requests in the
// returned log.
func (s server) loggedVia(t testing.TB, addr string) (*coordinationv1client.CoordinationV1Client, *requestLog) {
	t.Helper()
	log := &requestLog{watching: make(chan struct{})}
	return s.clientFor(t, addr, log.wrap), log
}

// loggedClient is client with a client that records its requests in the
// returned log.
func (s server) loggedClient(t testing.TB) (*coordinationv1client.CoordinationV1Client, *requestLog) {
	t.Helper()
	p := testproxy.New(t, s.addr())
	return s.loggedVia(t, p.Addr())
}

func (s server) clientFor(t testing.TB, addr string, wrap func(http.RoundTripper) http.RoundTripper) *coordinationv1client.CoordinationV1Client {
	t.Helper()
	cfg := rest.CopyConfig(s.cfg)
	cfg.Host = "https://" + addr
	cfg.WrapTransport = wrap
	cli, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kube client: %v", err)
	}
	return cli
}

// client returns a client behind a proxy of its own, which is closed (and
// with it the client's connections) when t ends.
func (s server) client(t testing.TB) *coordinationv1client.CoordinationV1Client {
	t.Helper()
	p := testproxy.New(t, s.addr())
	return s.via(t, p.Addr())
}

// testBackend returns a Backend on its own client, closed when t ends.
func testBackend(t testing.TB, s server, opts *Options) *Backend {
	t.Helper()
	b, err := New(s.client(t), s.ns, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// testName returns an election name unique to this run of t, which is also
// a valid Lease name (so client-go can share it).
func testName(t testing.TB) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	n := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	return "kubetest-" + n + "-" + hex.EncodeToString(r[:])
}

// testCtx returns a context that ends with t, or after a minute.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func cand(election, id string) backend.Candidate {
	return backendCand(election, id, testTTL)
}

func backendCand(election, id string, ttl time.Duration) backend.Candidate {
	return backend.Candidate{Election: election, Identity: id, TTL: ttl}
}

// mustCampaign campaigns and fails t unless it wins.
func mustCampaign(t testing.TB, b *Backend, c backend.Candidate) *lease {
	t.Helper()
	l, err := b.Campaign(testCtx(t), c)
	if err != nil {
		t.Fatalf("Campaign(%q, %q): got %v, want a lease", c.Election, c.Identity, err)
	}
	return l.(*lease)
}

type result struct {
	l   backend.Lease
	err error
	at  time.Time
}

// campaignAsync campaigns in the background.
func campaignAsync(ctx context.Context, b backend.Backend, c backend.Candidate) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := b.Campaign(ctx, c)
		ch <- result{l, err, time.Now()}
	}()
	return ch
}

// await returns the background Campaign's result, failing t after d.
func await(t testing.TB, ch <-chan result, d time.Duration) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("Campaign: no result within %v", d)
		return result{}
	}
}

// pending fails t if the background Campaign returns within d.
func pending(t testing.TB, ch <-chan result, d time.Duration) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("Campaign returned (%v, %v) while the election was held; want it waiting", r.l, r.err)
	case <-time.After(d):
	}
}

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", raw, err)
	}
	return u
}

func testenvKubeURL(t testing.TB) string    { return testenv.KubeURL(t) }
func testenvKubeconfig(t testing.TB) string { return testenv.KubeKubeconfig(t) }

// requestLog records the Lease requests of a client that span the whole
// namespace (no field selector): lists (a list read in pages counts once,
// at its first page), and watches, of which the first to be answered
// closes watching.
type requestLog struct {
	mu       sync.Mutex
	lists    int
	watches  int
	watching chan struct{}
}

func (r *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		q := req.URL.Query()
		whole := req.Method == http.MethodGet && q.Get("fieldSelector") == "" && strings.HasSuffix(req.URL.Path, "/leases")
		watch := q.Get("watch") == "true"
		if whole && !watch && q.Get("continue") == "" {
			r.mu.Lock()
			r.lists++
			r.mu.Unlock()
		}
		resp, err := rt.RoundTrip(req)
		if whole && watch && err == nil && resp.StatusCode == http.StatusOK {
			r.mu.Lock()
			if r.watches++; r.watches == 1 {
				close(r.watching)
			}
			r.mu.Unlock()
		}
		return resp, err
	})
}

// namespaceLists returns how many lists of the whole namespace were
// started.
func (r *requestLog) namespaceLists() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists
}

// awaitWatch fails t unless a watch of the whole namespace is answered
// (the apiserver sends its events from then on) within d.
func (r *requestLog) awaitWatch(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case <-r.watching:
	case <-time.After(d):
		t.Fatalf("no watch of the namespace's Leases answered within %v", d)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// proxiedBackend returns a Backend whose client reaches the apiserver
// through a proxy of its own, closed when t ends, and the proxy.
func proxiedBackend(t *testing.T, s server) (*Backend, *testproxy.Proxy) {
	t.Helper()
	p := testproxy.New(t, s.addr())
	b, err := New(s.via(t, p.Addr()), s.ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, p
}
