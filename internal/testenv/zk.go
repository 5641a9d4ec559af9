package testenv

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// ZKMode asks the ZooKeeper server at addr for its mode with the srvr
// four-letter word ("leader", "follower" or "standalone"), and returns ""
// while the server does not serve, e.g. while it rejoins its ensemble.
// (zk.FLWSrvr cannot parse ZooKeeper 3.8's build date.) It fails tb when
// the server cannot be reached.
func ZKMode(tb testing.TB, addr string) string {
	tb.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatalf("srvr on %s: %v", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Write([]byte("srvr")); err != nil {
		tb.Fatalf("srvr on %s: %v", addr, err)
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		tb.Fatalf("srvr on %s: %v", addr, err)
	}
	for line := range strings.Lines(string(out)) {
		if mode, ok := strings.CutPrefix(strings.TrimSpace(line), "Mode: "); ok {
			return mode
		}
	}
	return ""
}

// ZKFollower returns the index in servers of a server whose mode is
// follower, so that a fault leaves the ensemble its leader; it fails tb
// when there is none.
func ZKFollower(tb testing.TB, servers []string) int {
	tb.Helper()
	for i, s := range servers {
		if ZKMode(tb, s) == "follower" {
			return i
		}
	}
	tb.Fatalf("no follower among %v", servers)
	return -1
}
