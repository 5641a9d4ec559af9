//go:build unix

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/leaderkit/elector/backendurl"
)

// diagnoseTimeout bounds each connection diagnose makes.
const diagnoseTimeout = time.Second

// defaultPorts are the ports a backend URL's hosts default to, by scheme
// ("redis" ends in an s and is no TLS scheme: each is listed).
var defaultPorts = map[string]string{"redis": "6379", "etcd": "2379", "zk": "2181",
	"rediss": "6379", "etcds": "2379", "zks": "2181"}

// tlsSchemes are the schemes of defaultPorts that connect with TLS.
var tlsSchemes = map[string]bool{"rediss": true, "etcds": true, "zks": true}

// diagnose says why the servers of rawURL may not have answered in time,
// as far as one TCP connection to each (and a TLS handshake, for a TLS
// scheme) can tell: refused, no answer to the connection, a TLS handshake
// that failed and why (an unknown certificate authority, a wrong name), or
// a server that accepts connections and completes the handshake, which
// then is slow or not of the expected kind. It returns "" for a URL it
// cannot read (migrate URLs, schemes of other drivers). Credentials never
// appear: only host:port and the network's own errors do.
func diagnose(ctx context.Context, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	useTLS := tlsSchemes[u.Scheme]
	port, ok := defaultPorts[u.Scheme]
	if !ok {
		return ""
	}
	addrs, err := backendurl.Hosts(u, port)
	if err != nil {
		return ""
	}
	var cfg *tls.Config
	if useTLS {
		p, err := backendurl.NewParams(u)
		if err != nil {
			return ""
		}
		if cfg, err = p.TLS(true, u.Scheme); err != nil {
			return ""
		}
	}
	found := make([]string, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() { found[i] = a + ": " + probe(ctx, a, cfg) })
	}
	wg.Wait()
	return strings.Join(found, "; ")
}

// probe connects to addr (with TLS under cfg when not nil) and says how
// far it got.
func probe(ctx context.Context, addr string, cfg *tls.Config) string {
	ctx, cancel := context.WithTimeout(ctx, diagnoseTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (err != nil && ctx.Err() != nil):
		return fmt.Sprintf("no answer to a TCP connection within %v", diagnoseTimeout)
	case err != nil:
		return err.Error()
	}
	defer c.Close()
	if cfg == nil {
		return "accepts connections: the server is slow, overloaded, or not the expected kind of server"
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(c, cfg)
	err = tc.HandshakeContext(ctx)
	var unknown x509.UnknownAuthorityError
	switch {
	case err == nil:
		return "accepts connections and completes the TLS handshake: the server is slow, overloaded, or refuses the client's certificate"
	case ctx.Err() != nil:
		return fmt.Sprintf("accepts connections, but the TLS handshake got no answer within %v", diagnoseTimeout)
	case errors.As(err, &unknown):
		return "TLS handshake failed: " + err.Error() + " (give the CA's certificate file as query parameter ca=FILE)"
	default:
		return "TLS handshake failed: " + err.Error()
	}
}
