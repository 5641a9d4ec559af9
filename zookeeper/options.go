package zookeeper

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// Defaults and limits for [Options] and [backend.Candidate].
const (
	// DefaultPrefix is the znode under which elections live when
	// [Options.Prefix] is empty.
	DefaultPrefix = "/elector"

	// MinTTL is the shortest Candidate.TTL the driver asks an ensemble for:
	// go-zookeeper bounds a connection handshake by 20/3 of the requested
	// session timeout, too short below this to connect reliably. The
	// ensemble's own range (by default 2×tickTime to 20×tickTime) is
	// narrower still.
	MinTTL = 100 * time.Millisecond

	// MaxTTL is the longest Candidate.TTL the driver asks for: the
	// protocol carries a session timeout as a 32-bit count of
	// milliseconds.
	MaxTTL = math.MaxInt32 * time.Millisecond

	// readTimeout is the session timeout Leader and Watch ask for when the
	// Backend has no campaign session to read on.
	readTimeout = 10 * time.Second

	// tlsHandshakeTimeout bounds a TLS handshake with one server when
	// [Options.TLS] is set. go-zookeeper's connect timeout (1 s) is too short
	// for a handshake with a loaded JVM, or for the first load of the
	// system's root certificates.
	tlsHandshakeTimeout = 5 * time.Second
)

// Options configures a [Backend]. A nil *Options means all defaults.
type Options struct {
	// Prefix is the znode under which every election lives: election "a/b"
	// is the znode Prefix+"/a/b". It must be an absolute path other than
	// "/", outside /zookeeper. Missing znodes are created as container
	// nodes. The default, used when Prefix is "", is [DefaultPrefix]
	// ("/elector"). A Curator LeaderLatch joins election E when its latch
	// path is Prefix+"/"+E.
	//
	// There is no empty prefix (unlike redlock's NoPrefix): elections at
	// the top of the tree could be named "zookeeper", the subtree the
	// server reserves for itself, and every election would be a child of
	// "/", whose children other applications own too.
	Prefix string

	// ACL is set on every znode the Backend creates (election parents and
	// candidates). Nil means creator-only, zk.AuthACL(zk.PermAll), when
	// Auth is set, and zk.WorldACL(zk.PermAll) (Curator's default: any
	// client may delete a leader's znode) without Auth; see the package
	// documentation, section Security.
	ACL []zk.ACL

	// Auth holds credentials added to every session of the Backend before
	// it is used, for example {Scheme: "digest", Secret:
	// []byte("user:password")}. With Auth and no ACL, the znodes the
	// Backend creates are readable and writable by these credentials only.
	Auth []Auth

	// TLS, when not nil, makes every connection to the servers a TLS
	// connection with this configuration, as ZooKeeper's secureClientPort
	// (served by the Netty connection factory) requires: set RootCAs to
	// verify the servers, and Certificates when they require client
	// certificates (ssl.clientAuth=need, ZooKeeper's default). An empty
	// ServerName means the host of the server address dialled. The TCP
	// connection under it is opened by Dialer; the handshake that follows
	// is bounded by 5 s. Nil means plain TCP.
	TLS *tls.Config

	// Dialer opens the TCP connection to one server, for example through a
	// proxy. Nil means net.DialTimeout.
	Dialer zk.Dialer

	// DisconnectGrace is how long a lease survives a lost connection while
	// its session may still be alive. Zero (the default, Curator's standard
	// policy) ends every lease of a session at once when its connection
	// drops. A positive grace keeps leases across a short blip: if the
	// session reconnects within the grace, each lease checks that its znode
	// is still there and first before it counts as held again; otherwise it
	// is lost when the grace ends. The grace must be at most half of every
	// Candidate.TTL campaigned with: Campaign refuses a TTL shorter than
	// twice the grace with an error wrapping [backend.ErrInvalid]. The local
	// [backend.Lease.Deadline] bounds a lease either way.
	DisconnectGrace time.Duration

	// DriftFactor is the fraction of a TTL by which the ZooKeeper leader's
	// clock may run ahead of this process's during one lease: every
	// Deadline is [backend.LeaseDeadline] of it. Zero means
	// [backend.DefaultDriftFactor]; the allowed range is (0,
	// [backend.MaxDriftFactor]].
	DriftFactor float64

	// TickTime and SyncLimit state the ensemble's tickTime and syncLimit
	// (zoo.cfg), which bound how late the ensemble's leader may count a
	// session that a follower kept answering (see [Timing] and section
	// Safety of docs/design/zookeeper.md): Deadlines count an answer
	// only (SyncLimit + 1) × TickTime + 100 ms after it arrived, and
	// Campaign refuses a TTL below [MinSafeTTL] of them. Set both, or
	// neither: zero means the Backend asks the servers once, with the conf
	// four-letter word (which their 4lw.commands.whitelist must allow),
	// and assumes ZooKeeper's sample configuration, tickTime 2s and
	// syncLimit 5, when no server reports them. State the largest values
	// of any server, and the new ones before a rolling change raises them.
	TickTime  time.Duration
	SyncLimit int

	// Logger receives go-zookeeper's own diagnostics (connection failures)
	// at level Warn and, at level Debug, each wait of a candidate behind
	// another (its predecessor's znode, identity and session). Nil discards
	// them; the driver logs nothing else.
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
	prefix string
	acl    []zk.ACL
	auth   []Auth
	dialer zk.Dialer
	grace  time.Duration
	drift  float64
	logger *slog.Logger

	tick      time.Duration // Options.TickTime; 0: learn it
	syncLimit int
}

func (o *Options) config() (config, error) {
	if o == nil {
		o = &Options{}
	}
	c := config{
		prefix: o.Prefix,
		acl:    o.ACL,
		auth:   o.Auth,
		dialer: o.Dialer,
		grace:  o.DisconnectGrace,
		logger: o.Logger,

		tick:      o.TickTime,
		syncLimit: o.SyncLimit,
	}
	if c.prefix == "" {
		c.prefix = DefaultPrefix
	}
	if err := validatePrefix(c.prefix); err != nil {
		return c, err
	}
	if c.grace < 0 {
		return c, fmt.Errorf("zookeeper: %w: Options.DisconnectGrace is %v; want >= 0, at most half of every TTL campaigned with",
			backend.ErrInvalid, c.grace)
	}
	switch {
	case c.tick < 0 || c.syncLimit < 0:
		return c, fmt.Errorf("zookeeper: %w: Options.TickTime is %v and Options.SyncLimit %d; want both positive (the ensemble's zoo.cfg values), or both zero to ask the servers",
			backend.ErrInvalid, c.tick, c.syncLimit)
	case (c.tick == 0) != (c.syncLimit == 0):
		return c, fmt.Errorf("zookeeper: %w: Options.TickTime is %v and Options.SyncLimit %d; want both set (the ensemble's zoo.cfg values), or both zero to ask the servers",
			backend.ErrInvalid, c.tick, c.syncLimit)
	case c.tick > 0 && c.tick < time.Millisecond:
		return c, fmt.Errorf("zookeeper: %w: Options.TickTime is %v; want whole milliseconds, as zoo.cfg states it", backend.ErrInvalid, c.tick)
	}
	drift, err := backend.ValidateDriftFactor(o.DriftFactor)
	if err != nil {
		return c, fmt.Errorf("zookeeper: %w", err)
	}
	c.drift = drift
	switch {
	case c.acl != nil:
	case len(c.auth) > 0:
		c.acl = zk.AuthACL(zk.PermAll) // the server expands it to the session's identities
	default:
		c.acl = zk.WorldACL(zk.PermAll)
	}
	if o.TLS != nil {
		c.dialer = tlsDialer(c.dialer, o.TLS)
	}
	for i, a := range c.auth {
		if a.Scheme == "" {
			return c, fmt.Errorf("zookeeper: %w: Options.Auth[%d].Scheme is empty; want a scheme such as \"digest\"", backend.ErrInvalid, i)
		}
	}
	return c, nil
}

// sessionTimeout returns the session timeout to ask for a Candidate.TTL:
// the TTL truncated to whole milliseconds, the unit of ZooKeeper session
// timeouts. It refuses a TTL the driver cannot ask an ensemble for, or one
// too short for the configured DisconnectGrace.
func (c *config) sessionTimeout(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl < MinTTL || ttl > MaxTTL:
		return 0, fmt.Errorf("%w: TTL is %v; want between %v and %v, within the session timeouts the ensemble accepts (by default 2×tickTime to 20×tickTime)",
			backend.ErrInvalid, ttl, MinTTL, MaxTTL)
	case c.grace > ttl/2:
		return 0, fmt.Errorf("%w: TTL is %v; want at least twice Options.DisconnectGrace (%v)", backend.ErrInvalid, ttl, c.grace)
	}
	return ttl.Truncate(time.Millisecond), nil
}

// tlsDialer returns a zk.Dialer that opens a connection with dial (nil
// means net.DialTimeout) and completes a TLS handshake over it with cfg
// within tlsHandshakeTimeout, or the dial's timeout if that is longer.
func tlsDialer(dial zk.Dialer, cfg *tls.Config) zk.Dialer {
	if dial == nil {
		dial = net.DialTimeout
	}
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		raw, err := dial(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			c.ServerName = host
		}
		conn := tls.Client(raw, c)
		ctx, cancel := context.WithTimeout(context.Background(), max(timeout, tlsHandshakeTimeout))
		defer cancel()
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		return conn, nil
	}
}

// zkLogger adapts go-zookeeper's Printf logging to slog, or discards it.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	if z.l != nil {
		z.l.Warn(fmt.Sprintf(format, args...), "component", "go-zookeeper")
	}
}
