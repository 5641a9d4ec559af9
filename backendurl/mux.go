package backendurl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/leaderkit/elector/backend"
)

// Opener opens a backend from a parsed URL whose scheme it was registered
// for with [Mux.Register].
type Opener interface {
	// OpenBackend returns the backend u describes and a Closer that closes
	// it together with every client OpenBackend created. On error it leaves
	// nothing open.
	OpenBackend(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error)
}

// OpenerFunc adapts a function to the [Opener] interface.
type OpenerFunc func(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error)

// OpenBackend calls f(ctx, u).
func (f OpenerFunc) OpenBackend(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	return f(ctx, u)
}

// Mux maps URL schemes to [Opener]s. The zero value is an empty Mux, ready
// to use. Its methods are safe for concurrent use.
type Mux struct {
	mu      sync.RWMutex
	openers map[string]Opener
}

var schemeRE = regexp.MustCompile(`^[a-z][a-z0-9+.-]*$`)

// Register makes o open URLs of scheme (lowercase, as in RFC 3986). It
// panics if scheme is malformed, o is nil, or scheme is already registered:
// those are programming errors found at start-up.
func (m *Mux) Register(scheme string, o Opener) {
	if !schemeRE.MatchString(scheme) {
		panic(fmt.Sprintf("backendurl: Register: malformed scheme %q", scheme))
	}
	if o == nil {
		panic(fmt.Sprintf("backendurl: Register(%q): nil Opener", scheme))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.openers[scheme]; dup {
		panic(fmt.Sprintf("backendurl: Register: scheme %q registered twice", scheme))
	}
	if m.openers == nil {
		m.openers = make(map[string]Opener)
	}
	m.openers[scheme] = o
}

// Schemes returns the registered schemes, sorted.
func (m *Mux) Schemes() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := make([]string, 0, len(m.openers))
	for k := range m.openers {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// ValidScheme reports whether scheme is registered.
func (m *Mux) ValidScheme(scheme string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.openers[scheme]
	return ok
}

// Open parses rawURL and opens the backend it describes with the [Opener]
// registered for its scheme. Close the returned io.Closer when done: it
// closes the backend and the clients Open created. Errors name the problem
// and never show the URL's credentials: not the password, not the user
// name, not any run of four or more of their bytes, however malformed the
// URL.
func (m *Mux) Open(ctx context.Context, rawURL string) (backend.Backend, io.Closer, error) {
	b, c, err := m.open(ctx, rawURL)
	return b, c, redact(err, allSecretsOf(rawURL))
}

func (m *Mux) open(ctx context.Context, rawURL string) (backend.Backend, io.Closer, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	switch {
	case !ok:
		// The input is not echoed: without "://" nothing tells where its
		// credentials end, so no redaction could be sure to hide them.
		return nil, nil, fmt.Errorf("backendurl: the URL has no \"://\", so it is not a backend URL; want scheme://host:port[,host:port...] with a scheme among %s", m.schemeList())
	case !schemeRE.MatchString(strings.ToLower(scheme)):
		return nil, nil, fmt.Errorf("backendurl: scheme %q is malformed (a space or a stray character?); want one of %s", scheme, m.schemeList())
	case strings.Contains(rest, "#"):
		return nil, nil, fmt.Errorf("backendurl: %q has a '#': a backend URL has no fragment; percent-encode '#' in a password as %%23 ('/' as %%2F, '?' as %%3F)", rawURL)
	}
	// net/url refuses a list of hosts with ports ("h1:1,h2:2"): parse the
	// URL with a placeholder host, then put the list back.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	userinfo, hostList := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hostList = authority[:i+1], authority[i+1:]
	} else if path, _, _ := strings.Cut(rest[end:], "?"); strings.Contains(path, "@") {
		return nil, nil, errors.New("backendurl: an '@' after the host: percent-encode '/' and '?' in a user name or password as %2F and %3F")
	}
	u, err := url.Parse(scheme + "://" + userinfo + "placeholder" + rest[end:])
	if err == nil {
		u.Host = hostList
	}
	if err != nil {
		// url.Error quotes the whole URL, password included: report the cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, fmt.Errorf("backendurl: malformed URL: %w", err)
	}
	return m.openURL(ctx, u)
}

// OpenURL is [Mux.Open] for a parsed URL.
func (m *Mux) OpenURL(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	b, c, err := m.openURL(ctx, u)
	var secrets []string
	if u.User != nil {
		secrets = []string{u.User.String(), u.User.Username()}
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
	}
	if u.RawQuery != "" {
		secrets = append(secrets, allSecretsOf("?"+u.RawQuery)...)
	}
	return b, c, redact(err, secrets)
}

func (m *Mux) openURL(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	if u.Scheme == "" {
		return nil, nil, fmt.Errorf("backendurl: %q has no scheme; want one of %s", redacted(u), m.schemeList())
	}
	m.mu.RLock()
	o, ok := m.openers[strings.ToLower(u.Scheme)]
	m.mu.RUnlock()
	if !ok {
		return nil, nil, m.unknownScheme(u)
	}
	b, c, err := o.OpenBackend(ctx, u)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("backendurl: %q: %w", redacted(u), err)
	}
	return b, c, nil
}

func (m *Mux) schemeList() string {
	s := m.Schemes()
	if len(s) == 0 {
		return "(none registered)"
	}
	return strings.Join(s, ", ")
}

var defaultMux = new(Mux)

// DefaultMux returns the Mux [Open] uses. Drivers register their schemes on
// it when their package is imported: redlock registers redis and rediss,
// etcd registers etcd and etcds, zookeeper registers zk and zks. A program may
// register more schemes on it.
func DefaultMux() *Mux { return defaultMux }

// Register makes o open URLs of scheme with [DefaultMux]; see
// [Mux.Register]. Drivers call it from an init function.
func Register(scheme string, o Opener) { defaultMux.Register(scheme, o) }

// Open opens rawURL with [DefaultMux]; see [Mux.Open]. Only the schemes of
// the driver packages the program imports are known.
func Open(ctx context.Context, rawURL string) (backend.Backend, io.Closer, error) {
	return defaultMux.Open(ctx, rawURL)
}

// drivers names, for each scheme of this module's drivers, the package
// whose import registers it: an error for an unregistered scheme says what
// to import. Only names: this package imports no driver.
var drivers = map[string]string{
	"redis":  "github.com/leaderkit/elector/redlock",
	"rediss": "github.com/leaderkit/elector/redlock",
	"etcd":   "github.com/leaderkit/elector/etcd",
	"etcds":  "github.com/leaderkit/elector/etcd",
	"zk":     "github.com/leaderkit/elector/zookeeper",
	"zks":    "github.com/leaderkit/elector/zookeeper",

	"migrate+old":  "github.com/leaderkit/elector/migrate",
	"migrate+both": "github.com/leaderkit/elector/migrate",
	"migrate+new":  "github.com/leaderkit/elector/migrate",
	"migrate+done": "github.com/leaderkit/elector/migrate",
}

// unknownScheme is the error for a scheme nobody registered on m.
func (m *Mux) unknownScheme(u *url.URL) error {
	scheme := strings.ToLower(u.Scheme)
	if pkg, ok := drivers[scheme]; ok && m == defaultMux {
		return fmt.Errorf("backendurl: %q: scheme %q is not registered; import _ %q to register it (registered: %s)",
			redacted(u), scheme, pkg, m.schemeList())
	}
	return fmt.Errorf("backendurl: %q: unknown scheme %q; want one of %s", redacted(u), u.Scheme, m.schemeList())
}

// Closers closes its elements in order and returns the first error: the
// io.Closer an [Opener] returns for a backend and the clients it made.
type Closers []io.Closer

// Close closes every element in order and returns the first error.
func (cs Closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// redacted is u as a string with the whole userinfo, user name included,
// replaced by "*", the mark every redacted error uses. A URL with neither
// host nor path keeps its "//" (migrate+both://?old=..), which
// url.URL.String drops.
func redacted(u *url.URL) string {
	const mark = "redacted"
	v := *u
	if u.User != nil {
		v.User = url.User(mark) // url.User would escape "*"
	}
	s := v.String()
	switch {
	case u.User != nil:
		s = strings.Replace(s, "//"+mark+"@", "//*@", 1)
	case v.Opaque == "" && v.Scheme != "" && v.Host == "" && v.Path == "":
		s = strings.Replace(s, v.Scheme+":", v.Scheme+"://", 1)
	}
	return s
}
