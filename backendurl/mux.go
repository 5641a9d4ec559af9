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

// StoreNamer is an optional ability of an [Opener], found by type
// assertion: it names the store a URL of its scheme reaches, so that two
// URLs written differently (other client parameters, another form of the
// same server's address) are known to reach the same records. Package
// migrate refuses an old and a new URL that name one store. [Mux.StoreName]
// asks it.
type StoreNamer interface {
	// StoreName returns a name equal for every URL that reaches the
	// records of the same elections, and different for URLs that do not.
	// It may read files the URL names (a kubeconfig), but contacts no
	// server.
	StoreName(u *url.URL) (string, error)
}

// StoreName parses rawURL and returns the name the [Opener] of its scheme
// gives the store it reaches ([StoreNamer]), and false when that Opener
// names no stores (or the scheme is not registered). Errors never show the
// URL's credentials.
func (m *Mux) StoreName(rawURL string) (string, bool, error) {
	u, err := m.parse(rawURL)
	if err != nil {
		return "", false, err
	}
	m.mu.RLock()
	o := m.openers[strings.ToLower(u.Scheme)]
	m.mu.RUnlock()
	n, ok := o.(StoreNamer)
	if !ok {
		return "", false, nil
	}
	name, err := n.StoreName(u)
	if err != nil {
		return "", true, hideNested(fmt.Errorf("backendurl: %q: %w", redacted(u), err), u)
	}
	return name, true, nil
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
// and never show the URL's credentials, however short and however
// malformed the URL: not a byte of the user name or password, nor of those
// of a URL nested in its query. A URL whose credentials cannot be told
// apart from the rest (an unencoded '/', '?', '#' or '@' in a password, so
// that an '@' follows the host list) is refused without being quoted.
func (m *Mux) Open(ctx context.Context, rawURL string) (backend.Backend, io.Closer, error) {
	u, err := m.parse(rawURL)
	if err != nil {
		return nil, nil, err
	}
	return m.openURL(ctx, u)
}

// Parse parses rawURL as [Open] reads it, without opening anything: Host
// holds the host list as written ("h1:1,h2:2", which url.Parse refuses),
// User the credentials. It refuses what Open refuses before it looks at the
// scheme's Opener: no "://", a malformed scheme, a '#', an '@' after the
// host list, a malformed user name or password. Its errors never show the
// credentials. An Opener that reads a URL nested in its own (as
// migrate+<phase>:// does) parses it with Parse, so that both are read by
// one grammar.
func Parse(rawURL string) (*url.URL, error) { return defaultMux.parse(rawURL) }

// parse is [Parse]; its errors list m's schemes.
func (m *Mux) parse(rawURL string) (*url.URL, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	switch {
	case !ok:
		// The input is not echoed: without "://" nothing tells where its
		// credentials end.
		return nil, fmt.Errorf("backendurl: the URL has no \"://\", so it is not a backend URL; want scheme://host:port[,host:port...] with a scheme among %s", m.schemeList())
	case !schemeRE.MatchString(strings.ToLower(scheme)) && strings.ContainsAny(scheme, ":/@"):
		// Credentials typed before a stray "://" would be in it.
		return nil, fmt.Errorf("backendurl: the scheme, before \"://\", is malformed (a ':', '/' or '@' in it); want one of %s", m.schemeList())
	case !schemeRE.MatchString(strings.ToLower(scheme)):
		return nil, fmt.Errorf("backendurl: scheme %q is malformed (a space or a stray character?); want one of %s", scheme, m.schemeList())
	case strings.Contains(rest, "#"):
		return nil, errors.New("backendurl: the URL has a '#': a backend URL has no fragment; percent-encode '#' in a password as %23 ('/' as %2F, '?' as %3F, '@' as %40)")
	}
	// The authority ends at the first '/', '?' or '#' (RFC 3986); an '@'
	// after it may end credentials that hold one of those unencoded.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if strings.Contains(rest[end:], "@") {
		return nil, errStrayAt
	}
	// net/url refuses a list of hosts with ports ("h1:1,h2:2"): parse the
	// URL with a placeholder host, then put the list back.
	authority := rest[:end]
	userinfo, hostList := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hostList = authority[:i+1], authority[i+1:]
	}
	u, err := url.Parse(scheme + "://" + userinfo + "placeholder" + rest[end:])
	if err != nil {
		if _, nerr := url.Parse(scheme + "://placeholder" + rest[end:]); nerr == nil {
			// The error is about the userinfo: its message would quote it.
			return nil, errors.New("backendurl: malformed user name or password: percent-encode '%' as %25, and any character other than letters, digits and -._~!$&'()*+,;=: as %XX")
		}
		// url.Error quotes the whole URL, password included: report the cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("backendurl: malformed URL: %w", err)
	}
	u.Host = hostList
	return u, nil
}

// OpenURL is [Mux.Open] for a parsed URL. It refuses u if it has an '@'
// outside its userinfo (in the host, path, query or fragment): u may then
// come from a URL whose password held an unencoded '/', '?' or '#'.
func (m *Mux) OpenURL(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	return m.openURL(ctx, u)
}

func (m *Mux) openURL(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	if strayAt(u) {
		return nil, nil, errStrayAt
	}
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
		return nil, nil, hideNested(fmt.Errorf("backendurl: %q: %w", redacted(u), err), u)
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
