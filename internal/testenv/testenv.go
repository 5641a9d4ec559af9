package testenv

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Credentials configured on the servers by scripts/servers.sh.
const (
	// RedisPassword is the requirepass (default user's password) of the
	// Redis node at [RedisAuthAddr].
	RedisPassword = "elector-secret"
	// RedisACLUser is an ACL user with all permissions on the Redis node at
	// [RedisAuthAddr]; its password is [RedisACLPassword].
	RedisACLUser = "elector"
	// RedisACLPassword is the password of [RedisACLUser].
	RedisACLPassword = "elector-acl"
	// EtcdUser is the etcd user with the root role on the TLS member at
	// [EtcdTLS]; its password is [EtcdPassword]. The client certificate's
	// common name names no etcd user, so a client must authenticate with a
	// password as well as its certificate.
	EtcdUser = "root"
	// EtcdPassword is the password of [EtcdUser].
	EtcdPassword = "elector-root"
	// EtcdTLSServerName is the only name in the server certificate of the
	// etcd member at [EtcdTLSNamed]: a client reaching it at 127.0.0.1 must
	// set it as the TLS server name.
	EtcdTLSServerName = "etcd.internal"
)

// The environment variables printed by `scripts/servers.sh env`.
const (
	envRedisAddrs     = "ELECTOR_REDIS_ADDRS"
	envRedisAuthAddr  = "ELECTOR_REDIS_AUTH_ADDR"
	envEtcdEndpoints  = "ELECTOR_ETCD_ENDPOINTS"
	envEtcdTLS        = "ELECTOR_ETCD_TLS_ENDPOINT"
	envEtcdTLSCA      = "ELECTOR_ETCD_TLS_CA"
	envEtcdTLSCert    = "ELECTOR_ETCD_TLS_CERT"
	envEtcdTLSKey     = "ELECTOR_ETCD_TLS_KEY"
	envEtcdTLSNamed   = "ELECTOR_ETCD_TLS_NAMED_ENDPOINT"
	envRedisTLSAddr   = "ELECTOR_REDIS_TLS_ADDR"
	envRedisTLSCA     = "ELECTOR_REDIS_TLS_CA"
	envRedisTLSCert   = "ELECTOR_REDIS_TLS_CERT"
	envRedisTLSKey    = "ELECTOR_REDIS_TLS_KEY"
	envZKStockServers = "ELECTOR_ZK_STOCK_SERVERS"
	envZKServers      = "ELECTOR_ZK_SERVERS"
	envZKTLSServer    = "ELECTOR_ZK_TLS_SERVER"
	envZKTLSCA        = "ELECTOR_ZK_TLS_CA"
	envZKTLSCert      = "ELECTOR_ZK_TLS_CERT"
	envZKTLSKey       = "ELECTOR_ZK_TLS_KEY"
	envScripts        = "ELECTOR_SCRIPTS"
)

// RedisAddrs returns the host:port addresses of the five independent Redis
// masters (127.0.0.1:7001-7005), in node order: element i is node i+1 for
// [Fault].
func RedisAddrs(t testing.TB) []string {
	t.Helper()
	return list(t, envRedisAddrs)
}

// RedisAuthAddr returns the host:port of the Redis node that requires
// authentication (node 6 for [Fault]): password [RedisPassword] for the
// default user, or user [RedisACLUser] with [RedisACLPassword].
func RedisAuthAddr(t testing.TB) string {
	t.Helper()
	return lookup(t, envRedisAuthAddr)
}

// RedisTLS returns the host:port of the Redis node that accepts TLS only
// (node 7 for [Fault]) and the paths of the PEM files to reach it: the CA
// that signed the server's certificate (valid for 127.0.0.1 and localhost),
// and the client certificate and key the node requires (mutual TLS). The
// node also requires the password [RedisPassword].
func RedisTLS(t testing.TB) (addr, ca, cert, key string) {
	t.Helper()
	return lookup(t, envRedisTLSAddr), lookup(t, envRedisTLSCA), lookup(t, envRedisTLSCert), lookup(t, envRedisTLSKey)
}

// EtcdEndpoints returns the host:port client endpoints of the three-member
// etcd cluster (plain HTTP, no auth), in member order: element i is member
// i+1 for [Fault].
func EtcdEndpoints(t testing.TB) []string {
	t.Helper()
	return list(t, envEtcdEndpoints)
}

// EtcdTLS returns the host:port endpoint of the single-member etcd server
// that requires client-certificate TLS and password auth ([EtcdUser],
// [EtcdPassword]), and the paths of the PEM files to reach it: the CA that
// signed the server's certificate (valid for 127.0.0.1 and localhost), and the
// client certificate and key. It is member 4 for [Fault].
func EtcdTLS(t testing.TB) (endpoint, ca, cert, key string) {
	t.Helper()
	return lookup(t, envEtcdTLS), lookup(t, envEtcdTLSCA), lookup(t, envEtcdTLSCert), lookup(t, envEtcdTLSKey)
}

// EtcdTLSNamed returns the host:port endpoint (on 127.0.0.1) of the
// single-member etcd server whose certificate names only the DNS name
// [EtcdTLSServerName]. It requires client-certificate TLS with the CA,
// certificate and key of [EtcdTLS], and no password. It is member 5 for
// [Fault].
func EtcdTLSNamed(t testing.TB) string {
	t.Helper()
	return lookup(t, envEtcdTLSNamed)
}

// ZKServers returns the host:port client addresses of the three-server
// ZooKeeper ensemble, in server order: element i is server i+1 for [Fault].
func ZKServers(t testing.TB) []string {
	t.Helper()
	return list(t, envZKServers)
}

// ZKStockServers returns the host:port client addresses of the second
// three-server ZooKeeper ensemble, which runs ZooKeeper's stock timing
// (tickTime 2s, syncLimit 5, sessions 4-40 s), in server order: element i
// is server i+5 for [Fault].
func ZKStockServers(t testing.TB) []string {
	t.Helper()
	return list(t, envZKStockServers)
}

// ZKTLS returns the host:port of the standalone ZooKeeper server that
// accepts TLS only (server 4 for [Fault]) and the paths of the PEM files to
// reach it: the CA that signed the server's certificate (valid for 127.0.0.1
// and localhost), and the client certificate and key it requires (mutual
// TLS).
func ZKTLS(t testing.TB) (addr, ca, cert, key string) {
	t.Helper()
	return lookup(t, envZKTLSServer), lookup(t, envZKTLSCA), lookup(t, envZKTLSCert), lookup(t, envZKTLSKey)
}

// Scripts returns the absolute path of scripts/servers.sh, which manages the
// servers the other accessors name.
func Scripts(t testing.TB) string {
	t.Helper()
	return lookup(t, envScripts)
}

// Fault runs scripts/servers.sh with args to inject a fault into a test
// server, and returns its trimmed standard output. It fails the test if the
// script fails. Nodes are numbered from 1, in the order the accessors list
// them. The commands are:
//
//	Fault(t, "kill", "redis", "2")            // SIGKILL node 2
//	Fault(t, "pause", "zk", "1")              // SIGSTOP: connects succeed, requests hang
//	Fault(t, "resume", "zk", "1")             // SIGCONT
//	Fault(t, "restart", "redis", "2")         // back on the same port, empty
//	Fault(t, "restart", "redis", "2", "--aof") // with appendfsync always
//	Fault(t, "restart", "etcd", "1")          // with its data; waits until healthy
//	pid := Fault(t, "pid", "etcd", "3")
//
// A restart waits until the node is ready; for etcd and ZooKeeper that needs
// a quorum, so when restarting the first of several stopped members add
// "--no-wait". Restart every node a test breaks before the test ends (for
// example in t.Cleanup): the servers are shared by all tests that follow.
func Fault(t testing.TB, args ...string) string {
	t.Helper()
	script := Scripts(t)
	cmd := exec.Command(script, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("testenv: servers.sh %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// lookup returns the value of the environment variable name, or skips the
// test (fails it under CI) when it is not set.
func lookup(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	msg := fmt.Sprintf("testenv: %s not set; run `make test` "+
		"(or `eval \"$(scripts/servers.sh env)\"` after `scripts/servers.sh start`)", name)
	if inCI() {
		t.Fatal(msg + " — under CI the test servers are required")
	}
	t.Skip(msg)
	return ""
}

// list returns the comma-separated value of name as a slice.
func list(t testing.TB, name string) []string {
	t.Helper()
	var out []string
	for _, s := range strings.Split(lookup(t, name), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatalf("testenv: %s lists no address", name)
	}
	return out
}

// inCI reports whether the CI variable is set to a true value.
func inCI() bool {
	ci, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && ci
}

// Logger forwards Printf calls to a test's log until the test ends and drops
// them afterwards, so a client's background goroutines can log at any time
// without panicking the test binary. It satisfies the go-zookeeper zk.Logger
// interface: pass it with zk.WithLogger so the client does not print to
// standard output.
type Logger struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

// NewLogger returns a [Logger] writing to t's log until t's cleanup runs.
func NewLogger(t testing.TB) *Logger {
	l := &Logger{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return l
}

// Printf logs the formatted message to the test's log, unless the test has
// ended.
func (l *Logger) Printf(format string, args ...any) {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Logf(format, args...)
	}
}

// NewSlog returns a logger writing records at level and above to t's log
// until t's cleanup runs, one line a record.
func NewSlog(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{NewLogger(t)}, &slog.HandlerOptions{Level: level}))
}

// logWriter writes each Write, one slog record, to a [Logger].
type logWriter struct{ l *Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Printf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}
