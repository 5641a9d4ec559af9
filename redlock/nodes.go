package redlock

import (
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
)

// checkDistinct refuses clients that are the same node twice: the same
// client value, or clients whose addresses name the same server. Counting
// one server twice would let it alone make up a quorum that the other
// nodes never agreed to. Host names are compared as written (lowercased),
// not resolved: "localhost" and "127.0.0.1" are not caught.
func checkDistinct(clients []redis.UniversalClient) error {
	seen := make(map[string]int) // normalised address → first client index
	for i, c := range clients {
		for j := range i {
			if sameClient(c, clients[j]) {
				return fmt.Errorf("redlock: %w: clients[%d] is clients[%d] again; want each Redis master once", backend.ErrInvalid, i, j)
			}
		}
		for _, a := range clientAddrs(c) {
			if j, dup := seen[a]; dup && j != i {
				return fmt.Errorf("redlock: %w: clients[%d] and clients[%d] both address the Redis server %s; want each master once, on distinct servers", backend.ErrInvalid, j, i, a)
			}
			seen[a] = i
		}
	}
	return nil
}

// sameClient reports whether a and b are the same client value, without
// the panic == raises on interface values of an incomparable type.
func sameClient(a, b redis.UniversalClient) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// failoverAddr is the Addr go-redis gives every Sentinel failover client
// (NewFailoverClient in
// https://github.com/redis/go-redis/blob/master/sentinel.go): it names no
// server, so two such clients are not compared by it.
const failoverAddr = "FailoverClient"

// clientAddrs returns the normalised server addresses of a client of a
// known type, nil for other types.
func clientAddrs(c redis.UniversalClient) []string {
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		if o.Addr == failoverAddr {
			return nil
		}
		return []string{normalAddr(o.Network, o.Addr)}
	case *redis.ClusterClient:
		var out []string
		for _, a := range c.Options().Addrs {
			out = append(out, normalAddr("tcp", a))
		}
		return out
	case *redis.Ring:
		var out []string
		for _, a := range c.Options().Addrs {
			out = append(out, normalAddr("tcp", a))
		}
		return out
	}
	return nil
}

// normalAddr returns addr in one spelling per server: a Unix socket as a
// clean path; a TCP address as host:port with the host lowercased and
// without a trailing dot, an IP address in its canonical form
// ("::ffff:127.0.0.1" is 127.0.0.1), an empty host as "localhost" (what a
// dial of ":port" reaches) and the port without leading zeros.
func normalAddr(network, addr string) string {
	if network == "unix" {
		return "unix:" + filepath.Clean(addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return strings.ToLower(addr)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	if host == "" {
		host = "localhost"
	}
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	return net.JoinHostPort(host, port)
}

// nodeCountAdvice is the warning for a valid but weak number of masters,
// or "" for an odd number above one.
func nodeCountAdvice(n int) string {
	switch {
	case n == 1:
		return "redlock: a single Redis master tolerates no failure: while it is down no leader can be elected; use 3 or 5 independent masters"
	case n%2 == 0:
		return fmt.Sprintf("redlock: %d Redis masters need a quorum of %d, so they tolerate no more failed masters (%d) than %d would; use an odd number such as 3 or 5", n, n/2+1, n/2-1, n-1)
	}
	return ""
}

// Warnings returns advice about a valid but weak configuration, one
// sentence each, or nil: a single master (no failure tolerated) or an even
// number of masters (no more failures tolerated than with one master
// fewer, and more nodes to reach). Programs such as elect log them at
// start; New does not log. It implements [backend.Warner].
func (b *Backend) Warnings() []string {
	if w := nodeCountAdvice(len(b.clients)); w != "" {
		return []string{w}
	}
	return nil
}
