// Package backendurl opens an elector backend from a URL, so that a program
// (or the elect command) can be pointed at any store by configuration
// alone:
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
// This package imports no driver and no client library, so a program
// compiles only the drivers it imports. [Open] on a scheme of a driver the
// program did not import names the import that registers it. The section
// URLs of each driver's package documentation lists its parameters:
//
//	redis, rediss  package github.com/leaderkit/elector/redlock
//	etcd, etcds    package github.com/leaderkit/elector/etcd
//	zk, zks        package github.com/leaderkit/elector/zookeeper
//	kube           package github.com/leaderkit/elector/kube (a module of its own)
//	migrate+PHASE  package github.com/leaderkit/elector/migrate
//
// # Shared rules
//
// Every scheme of a store's driver has the form
//
//	scheme://[user:password@]host[:port][,host[:port]...][/path][?params]
//
// where the hosts are the servers of one store, a port left out is the
// scheme's default, and the path is what the driver says it is (a redis
// database number) or refused; kube:// takes no credentials and may leave
// the host out (see its package). The scheme ending in "s" (rediss, etcds,
// zks) is the same over TLS; kube:// with a host is HTTPS. Query
// parameters follow the rules of [Params]: each at most once, durations as
// Go writes them (50ms, 10s), booleans as [strconv.ParseBool] reads them (a
// bare name means true), and an unknown parameter is refused with the list
// of the scheme's. The TLS schemes share these parameters: ca verifies the servers' certificates
// (default: the system's roots), cert and key are the client certificate
// for servers that require one (mutual TLS, PEM file paths), server_name
// is the name the servers' certificates must hold when it is not the host
// in the URL (say the URL names 127.0.0.1 and the certificate
// etcd.internal), and insecure_skip_verify (bool) turns verification off.
//
// A query value may itself be a URL, percent-encoded (as in the
// migrate+PHASE schemes). Percent-encode '/', '?', '#' and '@' in a user
// name or password (%2F, %3F, %23, %40): unencoded they end the host list
// early (RFC 3986), so an '@' after the host list, or unencoded in a path
// or query value, is refused. Errors never show a byte of the credentials:
// they quote the URL, and the URLs nested in it, with user and password
// replaced by "*".
//
// # Errors
//
// Open refuses, with an error naming the problem: an unknown scheme
// (listing the known ones), an unknown or repeated query parameter
// (listing the scheme's), a value that does not parse, a missing host, a
// path where none is allowed, TLS parameters on a scheme without TLS, an
// '@' after the host list. Open does not contact the servers (except a zk
// URL with credentials, whose session must accept them), so unreachable
// servers show up as errors from the backend's calls, which are retried.
//
// # Closing
//
// Open creates the clients a backend needs and returns an io.Closer that
// closes the backend and then those clients: close it, not the backend.
package backendurl
