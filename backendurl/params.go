package backendurl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// params reads a URL's query parameters, remembering which names were read,
// so that finish can refuse the unknown ones. The first error sticks.
type params struct {
	q     url.Values
	known []string
	err   error
}

func newParams(u *url.URL) (*params, error) {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("malformed query: %w", err)
	}
	return &params{q: q}, nil
}

// get returns the value of name and whether it was given.
func (p *params) get(name string) (string, bool) {
	p.known = append(p.known, name)
	vs, ok := p.q[name]
	if !ok {
		return "", false
	}
	if len(vs) > 1 && p.err == nil {
		p.err = fmt.Errorf("query parameter %q given %d times; want it at most once", name, len(vs))
	}
	return vs[0], true
}

func (p *params) str(name string) string {
	v, _ := p.get(name)
	return v
}

func (p *params) duration(name string) time.Duration {
	v, ok := p.get(name)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("query parameter %s=%q: want a duration such as 50ms or 10s", name, v)
	}
	return d
}

func (p *params) float(name string) float64 {
	v, ok := p.get(name)
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("query parameter %s=%q: want a number such as 0.01", name, v)
	}
	return f
}

func (p *params) boolean(name string) bool {
	v, ok := p.get(name)
	if !ok {
		return false
	}
	if v == "" { // ?no_prefix alone means true
		return true
	}
	b, err := strconv.ParseBool(v)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("query parameter %s=%q: want true or false", name, v)
	}
	return b
}

// finish returns the first error, or an error naming an unknown parameter.
func (p *params) finish() error {
	if p.err != nil {
		return p.err
	}
	var unknown []string
	for k := range p.q {
		if !slices.Contains(p.known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	known := slices.Clone(p.known)
	slices.Sort(known)
	return fmt.Errorf("unknown query parameter %q; want one of %s", unknown[0], strings.Join(known, ", "))
}

// tlsConfig reads the TLS parameters into a config; it returns nil when
// useTLS is false, and then refuses any TLS parameter.
func (p *params) tlsConfig(useTLS bool, scheme string) (*tls.Config, error) {
	ca, cert, key := p.str("ca"), p.str("cert"), p.str("key")
	name := p.str("server_name")
	skip := p.boolean("insecure_skip_verify")
	if !useTLS {
		if ca != "" || cert != "" || key != "" || name != "" || skip {
			return nil, fmt.Errorf("TLS parameters (ca, cert, key, server_name, insecure_skip_verify) need the %ss:// scheme", scheme)
		}
		return nil, nil
	}
	cfg := &tls.Config{ServerName: name, InsecureSkipVerify: skip, MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("query parameter ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("query parameter ca: no PEM certificate in %s", ca)
		}
		cfg.RootCAs = pool
	}
	switch {
	case cert != "" && key != "":
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("query parameters cert and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case cert != "" || key != "":
		return nil, errors.New("query parameters cert and key go together; got only one")
	}
	return cfg, nil
}

// hosts splits u's host list "h1:p1,h2:p2" into host:port addresses,
// adding defaultPort where a port is missing.
func hosts(u *url.URL, defaultPort string) ([]string, error) {
	if u.Host == "" {
		return nil, errors.New("no host; want host:port[,host:port...] after //")
	}
	var out []string
	for h := range strings.SplitSeq(u.Host, ",") {
		if h == "" {
			return nil, fmt.Errorf("empty host in %q", u.Host)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port (or a bare IPv6 address): add the default one.
			host, port = strings.Trim(h, "[]"), defaultPort
		}
		if host == "" {
			return nil, fmt.Errorf("host %q has no name", h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("host %q: port %q is not a number in 1-65535", h, port)
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	return out, nil
}

// noPath refuses a path other than "" or "/".
func noPath(u *url.URL, hint string) error {
	if u.Path != "" && u.Path != "/" {
		return fmt.Errorf("unexpected path %q; %s", u.Path, hint)
	}
	return nil
}
