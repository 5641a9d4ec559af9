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

// Params reads a URL's query parameters for an [Opener] with the rules every
// scheme shares: each parameter at most once, values that parse, and no
// parameter the Opener did not read (Finish lists the valid ones). Read every
// parameter the scheme has, then call Finish. The first error sticks and is
// returned by Finish. Errors quote values as [Redact] shows them.
type Params struct {
	q     url.Values
	known []string
	err   error
}

// NewParams parses u's query. It fails on a malformed query, naming the
// parameter but quoting no value: a value may be a URL with credentials.
func NewParams(u *url.URL) (*Params, error) {
	q, err := url.ParseQuery(u.RawQuery)
	if err == nil {
		return &Params{q: q}, nil
	}
	var esc url.EscapeError
	if !errors.As(err, &esc) {
		return nil, fmt.Errorf("malformed query: %w", err) // quotes nothing of the query
	}
	for kv := range strings.SplitSeq(u.RawQuery, "&") {
		k, v, _ := strings.Cut(kv, "=")
		name, kerr := url.QueryUnescape(k)
		if _, verr := url.QueryUnescape(v); verr != nil && kerr == nil && validParamName(name) {
			return nil, fmt.Errorf("malformed query: the value of parameter %q has a '%%' that starts no %%XX escape; percent-encode '%%' as %%25", name)
		}
	}
	return nil, errors.New("malformed query: a '%' that starts no %XX escape; percent-encode '%' as %25")
}

// validParamName reports whether name looks like a parameter name, which
// an error may quote: letters, digits and '_' only.
func validParamName(name string) bool {
	for _, r := range name {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return name != ""
}

// get returns the value of name and whether it was given.
func (p *Params) get(name string) (string, bool) {
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

// String returns the value of parameter name, or "" when it is absent.
func (p *Params) String(name string) string {
	v, _ := p.get(name)
	return v
}

// Duration returns parameter name parsed by [time.ParseDuration] (50ms,
// 10s), or 0 when it is absent.
func (p *Params) Duration(name string) time.Duration {
	v, ok := p.get(name)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("query parameter %s=%q: want a duration such as 50ms or 10s", name, Redact(v))
	}
	return d
}

// Float returns parameter name as a number, or 0 when it is absent.
func (p *Params) Float(name string) float64 {
	v, ok := p.get(name)
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("query parameter %s=%q: want a number such as 0.01", name, Redact(v))
	}
	return f
}

// Bool returns parameter name as a boolean; the name alone (?no_prefix)
// means true. It returns false when the parameter is absent.
func (p *Params) Bool(name string) bool {
	v, ok := p.get(name)
	if !ok {
		return false
	}
	if v == "" { // ?no_prefix alone means true
		return true
	}
	b, err := strconv.ParseBool(v)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("query parameter %s=%q: want true or false", name, Redact(v))
	}
	return b
}

// Finish returns the first error, or an error naming an unknown parameter
// and listing the ones the Opener read.
func (p *Params) Finish() error {
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
	return fmt.Errorf("unknown query parameter %q; want one of %s", Redact(unknown[0]), strings.Join(known, ", "))
}

// TLS reads the TLS parameters every TLS scheme shares — ca, cert, key (PEM
// file paths), server_name and insecure_skip_verify — into a config. It
// returns nil when useTLS is false, and then refuses any TLS parameter,
// naming tlsScheme, the scheme that takes them.
func (p *Params) TLS(useTLS bool, tlsScheme string) (*tls.Config, error) {
	ca, cert, key := p.String("ca"), p.String("cert"), p.String("key")
	name := p.String("server_name")
	skip := p.Bool("insecure_skip_verify")
	if !useTLS {
		if ca != "" || cert != "" || key != "" || name != "" || skip {
			return nil, fmt.Errorf("TLS parameters (ca, cert, key, server_name, insecure_skip_verify) need the %s:// scheme", tlsScheme)
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

// Hosts splits u's host list "h1:p1,h2:p2" into host:port addresses,
// adding defaultPort where a port is missing. Each element is a host name,
// an IPv4 address or a bracketed IPv6 address ("[::1]"), with an optional
// ":port" in 1-65535. It refuses an empty list, an empty element, a
// malformed address and a bad port, naming the element.
func Hosts(u *url.URL, defaultPort string) ([]string, error) {
	if u.Host == "" {
		return nil, errors.New("no host; want host:port[,host:port...] after //")
	}
	var out []string
	for h := range strings.SplitSeq(u.Host, ",") {
		addr, err := hostPort(h, defaultPort)
		if err != nil {
			return nil, err
		}
		out = append(out, addr)
	}
	return out, nil
}

// hostPort checks one element of a host list and returns it as host:port.
func hostPort(h, defaultPort string) (string, error) {
	if h == "" {
		return "", errors.New("empty host in the host list; want host:port[,host:port...]")
	}
	host, port, err := net.SplitHostPort(h)
	switch {
	case err == nil:
	case !strings.ContainsAny(h, ":[]"):
		host, port = h, defaultPort
	case strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") && strings.Count(h, "[") == 1:
		host, port = h[1:len(h)-1], defaultPort
	default:
		return "", fmt.Errorf("host %q is malformed; want name, name:port, IPv4, IPv4:port or [IPv6]:port", h)
	}
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return "", fmt.Errorf("host %q: %q is not an IPv6 address", h, host)
	}
	if host == "" || (net.ParseIP(host) == nil && !validName(host)) {
		return "", fmt.Errorf("host %q: want a host name of letters, digits, '-', '_' and '.', or an IP address", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", fmt.Errorf("host %q: port %q is not a number in 1-65535", h, port)
	}
	return net.JoinHostPort(host, port), nil
}

// validName reports whether s can be a DNS host name: dot-separated labels
// of letters, digits, '-' and '_' (which some internal names use), each 1-63
// bytes, at most 253 bytes in all.
func validName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// NoPath refuses a path other than "" or "/", with hint saying what to do
// instead.
func NoPath(u *url.URL, hint string) error {
	if u.Path != "" && u.Path != "/" {
		return fmt.Errorf("unexpected path %q; %s", Redact(u.Path), hint)
	}
	return nil
}
