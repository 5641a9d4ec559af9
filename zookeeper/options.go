package zookeeper

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"
)

// Defaults for [Options].
const (
	// DefaultRoot is the znode under which elections live when
	// [Options.Root] is empty.
	DefaultRoot = "/elector"
	// DefaultSessionTimeout is the session timeout requested when
	// [Options.SessionTimeout] is zero.
	DefaultSessionTimeout = 10 * time.Second
)

// Options configures a [Backend]. A nil *Options means all defaults.
type Options struct {
	// Root is the znode under which every election lives: election "a/b"
	// is the znode Root+"/a/b". It must be an absolute path other than "/",
	// outside /zookeeper. Missing znodes are created as container nodes.
	// Zero means [DefaultRoot]. A Curator LeaderLatch joins election E when
	// its latch path is Root+"/"+E.
	Root string

	// SessionTimeout is the session timeout requested from the ensemble,
	// between 100ms and 1h; the servers clamp it to their own range
	// (2×tickTime to 20×tickTime by default) and every lease uses the
	// negotiated value as its TTL. Zero means [DefaultSessionTimeout].
	SessionTimeout time.Duration

	// ACL is set on every znode the Backend creates (election parents and
	// candidates). Nil means zk.WorldACL(zk.PermAll), Curator's default.
	ACL []zk.ACL

	// Auth holds credentials added to the session before it is used, for
	// example {Scheme: "digest", Secret: []byte("user:password")} together
	// with ACL zk.DigestACL(zk.PermAll, "user", "password"). When set, New
	// blocks until the servers accept them.
	Auth []Auth

	// Dialer opens the TCP connection to one server, for example through a
	// TLS-terminating proxy. Nil means net.DialTimeout.
	Dialer zk.Dialer

	// DisconnectGrace is how long a lease survives a lost connection while
	// the session may still be alive. Zero (the default, Curator's standard
	// policy) ends every lease at once on disconnection. A positive grace,
	// at most half the session timeout, keeps leases across a short blip:
	// if the session reconnects within the grace, each lease checks that
	// its znode is still there and first before it counts as held again;
	// otherwise it is lost when the grace ends. The local
	// [backend.Lease.Deadline] bounds it either way.
	DisconnectGrace time.Duration

	// Logger receives go-zookeeper's own diagnostics (connection failures)
	// at level Warn. Nil discards them; the driver itself never logs.
	Logger *slog.Logger
}

// Auth is one credential for [Options.Auth], as passed to zk.Conn.AddAuth.
type Auth struct {
	// Scheme is the authentication scheme, for example "digest".
	Scheme string
	// Secret is the scheme's credential, for example "user:password".
	Secret []byte
}

// config is Options validated, with defaults applied.
type config struct {
	root    string
	timeout time.Duration
	acl     []zk.ACL
	auth    []Auth
	dialer  zk.Dialer
	grace   time.Duration
	logger  *slog.Logger
}

func (o *Options) config() (config, error) {
	if o == nil {
		o = &Options{}
	}
	c := config{
		root:    o.Root,
		timeout: o.SessionTimeout,
		acl:     o.ACL,
		auth:    o.Auth,
		dialer:  o.Dialer,
		grace:   o.DisconnectGrace,
		logger:  o.Logger,
	}
	if c.root == "" {
		c.root = DefaultRoot
	}
	if err := validateRoot(c.root); err != nil {
		return c, err
	}
	if c.timeout == 0 {
		c.timeout = DefaultSessionTimeout
	}
	if c.timeout < 100*time.Millisecond || c.timeout > time.Hour {
		return c, fmt.Errorf("zookeeper: Options.SessionTimeout is %v; want between 100ms and 1h", c.timeout)
	}
	if c.grace < 0 || c.grace > c.timeout/2 {
		return c, fmt.Errorf("zookeeper: Options.DisconnectGrace is %v; want between 0 and half the session timeout (%v)", c.grace, c.timeout/2)
	}
	if c.acl == nil {
		c.acl = zk.WorldACL(zk.PermAll)
	}
	for i, a := range c.auth {
		if a.Scheme == "" {
			return c, fmt.Errorf("zookeeper: Options.Auth[%d].Scheme is empty", i)
		}
	}
	return c, nil
}

// zkLogger adapts go-zookeeper's Printf logging to slog, or discards it.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	if z.l != nil {
		z.l.Warn(fmt.Sprintf(format, args...), "component", "go-zookeeper")
	}
}
