// Package backendurl opens an elector backend from a URL, so that a program
// (or the elect command) can be pointed at Redis, etcd or ZooKeeper by
// configuration alone:
//
//	import _ "github.com/leaderkit/elector/redlock" // registers redis:// and rediss://
//
//	b, closer, err := backendurl.Open(ctx, os.Getenv("ELECT_BACKEND"))
//	if err != nil { ... }
//	defer closer.Close()
//	e, err := elector.New(b, "send-invoices", nil)
//
// # Schemes
//
// Each driver owns its schemes: importing the driver package registers them
// with [DefaultMux] (as database/sql drivers register themselves), and the
// driver parses its own query parameters with the shared rules of [Params].
// This package imports no driver and no client library, so a program that
// uses only Redis compiles no etcd or ZooKeeper code. [Open] on a scheme of
// a driver the program did not import names the import that registers it.
//
// The drivers of this module register these schemes:
//
//	redis://[user:password@]host:port[,host:port...][/db][?params]
//	rediss://...   the same over TLS
//	etcd://[user:password@]host:port[,host:port...][?params]
//	etcds://...    the same over TLS
//	zk://[user:password@]host:port[,host:port...][/root][?params]
//	zks://...      the same over TLS (ZooKeeper's secureClientPort)
//
// (redis and rediss by package github.com/leaderkit/elector/redlock, etcd
// and etcds by .../etcd, zk and zks by .../zookeeper.) A redis URL names the independent masters of a Redlock quorum (one client
// each; 3 or 5 for fault tolerance), never replicas of one another. An etcd
// URL names the endpoints of one cluster; a zk URL the servers of one
// ensemble, and its path is the root znode of the elections (default
// /elector). A port may be left out: 6379, 2379 and 2181 are the defaults.
//
// Query parameters, by scheme (durations as Go writes them: 50ms, 10s):
//
//	redis, rediss  prefix, no_prefix (bool), request_timeout, drift_factor,
//	               dial_timeout
//	etcd, etcds    prefix, drift_factor, cleanup_timeout, dial_timeout
//	zk, zks        disconnect_grace, drift_factor
//	rediss, etcds, ca, cert, key (PEM file paths), server_name,
//	zks            insecure_skip_verify (bool)
//
// They map to the fields of redlock.Options, etcd.Options and
// zookeeper.Options of the same meaning, and are validated by the drivers'
// constructors. The TLS parameters: ca verifies the servers' certificates
// (default: the system's roots), cert and key are the client certificate
// for servers that require one (mutual TLS), and server_name is the name
// the servers' certificates must hold when it is not the host in the URL
// (say the URL names 127.0.0.1 and the certificate etcd.internal).
//
// ZooKeeper ACLs: a zk or zks URL's user and password add "digest"
// authentication to the session and protect the znodes it creates with the
// matching digest ACL, so that only that user can read or change the
// election. Without user and password the znodes are world:anyone with all
// permissions (Curator's default): any client of the ensemble can delete
// the leader's znode and so end its term. See the Security section of
// package zookeeper.
//
// Credentials: percent-encode '/', '?', '#' and '@' in a user name or
// password (%2F, %3F, %23, %40). Unencoded, they end the host list early
// (RFC 3986), and the rest of the password would be read as the host,
// path or query; so a URL with an '@' after its host list is refused, and
// so is a '@' in a path or query value that is not encoded as %40.
// Errors never show a byte of the credentials, whatever their length:
// they quote the URL with its user name and password, and those of the
// URLs nested in its query, replaced by "*".
//
// # Errors
//
// Open refuses, with an error naming the problem: an unknown scheme (listing
// the known ones), an unknown or repeated query parameter (listing the
// scheme's parameters), a value that does not parse, a missing host, a path
// where none is allowed, TLS parameters on a scheme without TLS, an '@'
// after the host list (see Credentials above). Open does
// not contact the servers (except a zk URL with credentials, whose session
// must accept them), so unreachable servers show up as errors from the
// backend's calls, which the elector retries.
//
// # Closing
//
// Open creates the clients a backend needs, and returns an io.Closer that
// closes the backend and then those clients. Close it, not merely the
// backend, when done.
package backendurl
