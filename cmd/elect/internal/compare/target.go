package compare

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/internal/testproxy"
	"github.com/leaderkit/elector/migrate"
)

// Scheme facts: default port, fencing-token source and safety assumptions,
// as the drivers' package documentation states them.
type schemeInfo struct {
	port, token, safety string
}

var schemes = map[string]schemeInfo{
	"redis": {"6379", "quorum counter: INCR on each master, the maximum over the acquiring quorum",
		"Redlock: safe only while masters keep their data (AOF fsync always or delayed restarts) and clocks drift within TTL×DriftFactor+2ms " +
			"(https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html)"},
	"etcd": {"2379", "create revision of the candidate key (Raft log order)",
		"consensus (Raft): safe while a majority of members is up; an unfenced lock is unsafe under pauses " +
			"(https://jepsen.io/blog/2020-01-30-etcd-3.4.3)"},
	"zk": {"2181", "czxid of the candidate znode (Zab log order)",
		"consensus (Zab): safe while a quorum of servers is up; a paused ex-leader is stopped only by the token " +
			"(https://zookeeper.apache.org/doc/current/recipes.html#sc_leaderElection)"},
	"kube": {"6443", "leaseTransitions of the Lease, incremented on every acquisition",
		"the apiserver's optimistic concurrency over etcd (Raft): safe while etcd keeps a majority and clocks agree in rate " +
			"(not in time) within DriftFactor; a paused ex-leader is stopped only by the token"},
}

func init() {
	schemes["rediss"] = schemes["redis"]
	schemes["etcds"] = schemes["etcd"]
}

// URLTarget returns a Target for the backend at rawURL, opened with mux (nil:
// backendurl.DefaultMux, where the imported drivers registered their
// schemes). Its name is the URL's scheme.
//
// For the schemes of this module's drivers (redis, rediss, etcd, etcds, zk)
// and of the kube driver (kube, with a host in the URL for OpenCrashable:
// a kube:// URL without one reads its servers from a kubeconfig) it also
// fills in TokenSource and Safety, and OpenCrashable: that client
// reaches the servers through a TCP proxy on the loopback interface of its
// own, which its Crash closes (every connection at once, new ones closed as they come),
// as the death of the holder's process would. For the cleartext schemes
// (redis, etcd, zk) OpenCounted opens the same kind of client, whose
// proxies count the requests it sends by reading the protocol's framing
// (RESP commands, gRPC messages over HTTP/2, ZooKeeper packets); TLS hides
// them, so rediss, etcds and zks have no OpenCounted. For redis and rediss,
// Cleanup deletes the keys of the run's elections on every node: the
// fencing counters (lock key + "//token"), which the driver never expires,
// and the lock keys, which only a lease of a cut-off holder still uses then.
//
// For a migrate+PHASE:// URL (package migrate), Cleanup does the same on
// each inner redis or rediss URL, and removes the "migrated" markers that
// phase new wrote into an old store of another kind (through its Unmark),
// so that neither store keeps anything of the run.
//
// Address is the URL without credentials or query.
//
// URLTarget does not contact the servers; it refuses a URL mux cannot open
// later (an unknown scheme is found only when Open is called).
func URLTarget(rawURL string, mux *backendurl.Mux) (Target, error) {
	if mux == nil {
		mux = backendurl.DefaultMux()
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return Target{}, errors.New("compare: malformed backend URL") // err would show the credentials
	}
	t := Target{
		Name:    u.Scheme,
		Address: addressOf(u),
		Open:    func(ctx context.Context) (*Client, error) { return openURL(ctx, mux, rawURL) },
	}
	if strings.HasPrefix(u.Scheme, migrate.SchemePrefix) {
		t.Cleanup = func(ctx context.Context, elections []string) error { return migrateCleanup(ctx, mux, u, elections) }
	}
	info, ok := schemes[u.Scheme]
	if !ok {
		return t, nil
	}
	t.TokenSource, t.Safety = info.token, info.safety
	if u.Scheme == "kube" && u.Host == "" {
		return t, nil
	}
	t.OpenCrashable = func(ctx context.Context) (*Client, error) { return openProxied(ctx, mux, u, info.port) }
	if parserFor(u.Scheme) != nil {
		t.OpenCounted = t.OpenCrashable
	}
	if u.Scheme == "redis" || u.Scheme == "rediss" {
		t.Cleanup = func(ctx context.Context, elections []string) error { return redisCleanup(ctx, u, elections) }
	}
	return t, nil
}

// addressOf is u's scheme, servers and path, without credentials or query;
// for a migrate URL, those of its two stores.
func addressOf(u *url.URL) string {
	if !strings.HasPrefix(u.Scheme, migrate.SchemePrefix) {
		return u.Scheme + "://" + u.Host + u.EscapedPath()
	}
	var parts []string
	for _, side := range []string{"old", "new"} {
		if inner, err := url.Parse(u.Query().Get(side)); err == nil && inner.Scheme != "" {
			parts = append(parts, side+" "+addressOf(inner))
		}
	}
	return strings.Join(parts, ", ")
}

func openURL(ctx context.Context, mux *backendurl.Mux, rawURL string) (*Client, error) {
	b, closer, err := mux.Open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return &Client{Backend: b, Closer: closer}, nil
}

// openProxied opens u with every server address replaced by a proxy's; the
// client's Requests counts what it sends when its protocol can be read, and
// its errors name the servers, not the proxies.
func openProxied(ctx context.Context, mux *backendurl.Mux, u *url.URL, port string) (*Client, error) {
	addrs, err := backendurl.Hosts(u, port)
	if err != nil {
		return nil, err
	}
	var (
		proxies  []*testproxy.Proxy
		closers  backendurl.Closers
		requests atomic.Int64
	)
	parser := parserFor(u.Scheme)
	local := make([]string, len(addrs))
	for i, a := range addrs {
		p, err := startProxy(a, parser, &requests)
		if err != nil {
			_ = closers.Close()
			return nil, err
		}
		proxies = append(proxies, p)
		closers = append(closers, closerFunc(p.Close))
		local[i] = p.Addr()
	}
	pu := *u
	pu.Host = strings.Join(local, ",")
	if strings.HasSuffix(u.Scheme, "s") || u.Scheme == "kube" { // TLS: verify the servers' real name
		q := pu.Query()
		if host, _, _ := net.SplitHostPort(addrs[0]); q.Get("server_name") == "" && net.ParseIP(host) == nil {
			q.Set("server_name", host)
			pu.RawQuery = q.Encode()
		}
	}
	b, closer, err := mux.Open(ctx, pu.String())
	if err != nil {
		_ = closers.Close()
		return nil, err
	}
	pairs := make([]string, 0, 2*len(addrs))
	for i, a := range addrs {
		pairs = append(pairs, local[i], a)
	}
	b = realAddrs{Backend: b, r: strings.NewReplacer(pairs...)}
	cut := func() {
		for _, p := range proxies {
			p.Cut()
		}
	}
	c := &Client{Backend: b, Closer: append(backendurl.Closers{closer}, closers...), Crash: cut}
	if parser != nil {
		c.Requests = requests.Load
	}
	return c, nil
}

// startProxy starts the proxy of one server: a cut-off client is cut off
// with its Cut, as the death of its process would. With a parser, it adds
// the requests clients send through it to requests.
//
// Counting belongs here rather than in the drivers: it measures what a
// client puts on the wire, whatever driver sent it, and costs the drivers
// nothing; only a protocol the proxy cannot read (HTTP/2 over TLS, the
// kube driver's) is counted by its driver, on its own API.
func startProxy(target string, parser func() requestParser, requests *atomic.Int64) (*testproxy.Proxy, error) {
	var opts *testproxy.Options
	if parser != nil {
		opts = &testproxy.Options{Sent: func() func([]byte) {
			rp := parser()
			return func(b []byte) { requests.Add(int64(rp.feed(b))) }
		}}
	}
	return testproxy.Start(target, opts)
}

// closerFunc is an io.Closer that calls f.
type closerFunc func()

func (f closerFunc) Close() error {
	f()
	return nil
}
