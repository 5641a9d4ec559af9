package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strings"
	"sync"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
)

// Client-side rate limit of the clients the kube:// opener makes, unless
// the URL's qps and burst say otherwise (client-go's own default, 5 and 10,
// would throttle a process that holds many elections).
const (
	defaultQPS   = 50
	defaultBurst = 100
	// maxQPS bounds the qps parameter: client-go keeps it as a float32,
	// where a larger number may become +Inf, which means no limit at all.
	maxQPS = 1e6
)

func init() {
	backendurl.Register("kube", opener{})
}

// opener opens kube:// URLs and names the store they reach.
type opener struct{}

func (opener) OpenBackend(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	return openURL(ctx, u)
}

// StoreName names the Leases a kube:// URL reaches: the apiserver's
// address (scheme, host and default port, lowercase; from the kubeconfig
// for a URL without a host) and the namespace. The client's parameters
// (qps, burst, credentials, timeouts) do not change which Leases it
// reaches. It implements backendurl.StoreNamer.
func (opener) StoreName(u *url.URL) (string, error) {
	cfg, ns, _, err := parseURL(u)
	if err != nil {
		return "", err
	}
	return storeName(cfg.Host, ns), nil
}

// storeName returns the name of the store of the Leases of namespace ns on
// the apiserver at host (a URL, or host[:port] for https).
func storeName(host, ns string) string {
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	h, err := url.Parse(host)
	if err != nil {
		return strings.ToLower(host) + " namespace " + ns
	}
	scheme := strings.ToLower(h.Scheme)
	port := h.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(h.Hostname()), port) + strings.TrimSuffix(h.Path, "/") + " namespace " + ns
}

// openURL opens kube:// URLs for package backendurl: the forms and
// parameters of the package documentation's # URLs section.
func openURL(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	cfg, ns, opts, err := parseURL(u)
	if err != nil {
		return nil, nil, err
	}
	// The client dials through conns (so client-go's transport cache
	// gives it a transport of its own), and the Closer closes its
	// connections: nothing of the client outlives it.
	conns := &connSet{conns: make(map[net.Conn]struct{})}
	cfg.Dial = conns.dial
	// Renewals of held Leases go before the other requests in the limit.
	cfg.RateLimiter = NewRateLimiter(cfg.QPS, cfg.Burst)
	cli, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kube client: %w", err)
	}
	b, err := New(cli, ns, opts)
	if err != nil {
		return nil, nil, err
	}
	return b, backendurl.Closers{b, conns}, nil
}

// connSet dials and keeps the connections of one client until Close.
type connSet struct {
	d      net.Dialer
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func (s *connSet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := s.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, errors.New("kube: the client was closed")
	}
	s.conns[c] = struct{}{}
	return &trackedConn{Conn: c, s: s}, nil
}

// Close closes every connection and refuses new ones.
func (s *connSet) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	clear(s.conns)
	return nil
}

// trackedConn leaves its set when closed.
type trackedConn struct {
	net.Conn
	s *connSet
}

func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c.Conn)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// parseURL returns the client configuration, namespace and Options a
// kube:// URL describes.
func parseURL(u *url.URL) (*rest.Config, string, *Options, error) {
	if u.User != nil {
		return nil, "", nil, errors.New("a kube URL takes no user or password; put a bearer token in a file and name it with token_file=")
	}
	if err := backendurl.NoPath(u, "name the namespace with ?namespace="); err != nil {
		return nil, "", nil, err
	}
	p, err := backendurl.NewParams(u)
	if err != nil {
		return nil, "", nil, err
	}
	opts := &Options{
		DriftFactor:    p.Float("drift_factor"),
		CleanupTimeout: p.Duration("cleanup_timeout"),
		RequestTimeout: p.Duration("request_timeout"),
		ElectorOnly:    p.Bool("elector_only"),
	}
	ns := p.String("namespace")
	qps, burst := p.Float("qps"), p.Float("burst")
	kubeconfig, kubecontext := p.String("kubeconfig"), p.String("context")
	tokenFile := p.String("token_file")
	tlsCfg := rest.TLSClientConfig{
		CAFile: p.String("ca"), CertFile: p.String("cert"), KeyFile: p.String("key"),
		ServerName: p.String("server_name"), Insecure: p.Bool("insecure_skip_verify"),
	}
	if err := p.Finish(); err != nil {
		return nil, "", nil, err
	}
	switch {
	case math.IsNaN(qps) || qps < 0 || qps > maxQPS:
		return nil, "", nil, fmt.Errorf("query parameter qps is %v; want a number of requests per second from 0 (meaning %d) to %g", qps, defaultQPS, float64(maxQPS))
	case burst < 0 || burst != math.Trunc(burst) || burst > math.MaxInt32:
		return nil, "", nil, fmt.Errorf("query parameter burst is %v; want a whole number >= 0 (0 means %d)", burst, defaultBurst)
	}
	var cfg *rest.Config
	if u.Host != "" {
		if kubeconfig != "" || kubecontext != "" {
			return nil, "", nil, errors.New("a kube URL with a host takes no kubeconfig or context; give one or the other")
		}
		hosts, err := backendurl.Hosts(u, "6443")
		if err != nil {
			return nil, "", nil, err
		}
		if len(hosts) != 1 {
			return nil, "", nil, fmt.Errorf("a kube URL names one apiserver; got %d hosts", len(hosts))
		}
		if (tlsCfg.CertFile == "") != (tlsCfg.KeyFile == "") {
			return nil, "", nil, errors.New("query parameters cert and key go together; got only one")
		}
		cfg = &rest.Config{Host: "https://" + hosts[0], BearerTokenFile: tokenFile, TLSClientConfig: tlsCfg}
		if ns == "" {
			ns = "default"
		}
	} else {
		if tokenFile != "" || tlsCfg.CAFile != "" || tlsCfg.CertFile != "" || tlsCfg.KeyFile != "" || tlsCfg.ServerName != "" || tlsCfg.Insecure {
			return nil, "", nil, errors.New("token_file and the TLS parameters (ca, cert, key, server_name, insecure_skip_verify) need a host; without one the kubeconfig says how to connect")
		}
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = kubeconfig
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubecontext})
		if cfg, err = cc.ClientConfig(); err != nil {
			if clientcmd.IsEmptyConfig(err) {
				// client-go's own message suggests KUBERNETES_MASTER,
				// which nothing here reads.
				return nil, "", nil, errors.New("kubeconfig: none found (not in $KUBECONFIG, ~/.kube/config, the URL's kubeconfig=, nor a pod's service account); " +
					"name one with kubeconfig=FILE, or give the URL the apiserver's host:port with token_file= and ca=")
			}
			return nil, "", nil, fmt.Errorf("kubeconfig: %w", err)
		}
		if ns == "" {
			if ns, _, err = cc.Namespace(); err != nil {
				return nil, "", nil, fmt.Errorf("kubeconfig: namespace: %w", err)
			}
		}
	}
	cfg.QPS, cfg.Burst = float32(defaultQPS), defaultBurst
	if qps > 0 {
		cfg.QPS = float32(qps)
	}
	if burst > 0 {
		cfg.Burst = int(burst)
	}
	cfg.UserAgent = "elector-kube"
	return cfg, ns, opts, nil
}
