//go:build unix

package main

import (
	"bufio"
	"io"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaderkit/elector/internal/testenv"
)

// TestOldOnlyReplicaWaitsBehindMarker checks what docs/migration.md says
// of a replica still on the old URL alone once step 3 has written the
// marker: it waits behind the marker, silently (no "campaign failed"
// warning), never runs its command, and `elect status` on the old URL names
// the marker as the leader. Not t.Parallel: it counts acquire attempts
// through MONITOR on a Redis node, which slows that node for every other
// test's requests.
func TestOldOnlyReplicaWaitsBehindMarker(t *testing.T) {
	old, nw := backendURL(t, "redis", nil), backendURL(t, "etcd", nil)
	name := election(t)
	phaseNew := "migrate+new://?" + url.Values{"old": {old}, "new": {nw}}.Encode()
	// Step 3: a phase-new replica leads once, which writes the marker.
	if code, out := runElect(t, nil, "run", "--once", "--ttl=1s", "--hold=2s", "--wait=2s", "--backend="+phaseNew, "--election="+name, "--", "true"); code != 0 {
		t.Fatalf("phase new replica: exit %d\n%s", code, out)
	}
	identity := "old-only-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	attempts := acquireAttempts(t, testenv.RedisAddrs(t)[0], identity)
	p := startElect(t, "old-only", nil, "run", "--ttl=1s", "--backend="+old, "--election="+name, "--identity="+identity,
		"--", "sh", "-c", "echo COMMAND RAN; sleep 60")
	// Five acquire attempts: the first finds the marker, the second follows
	// the subscription to releases at once, and each later one comes a
	// capped wait of one TTL after the last, as a marker never expires.
	deadline := time.After(30 * time.Second)
	for n := 0; n < 5; {
		out, written := p.out.Next()
		if strings.Contains(out, "COMMAND RAN") {
			t.Fatalf("old-only replica ran its command behind the marker after %d acquire attempts:\n%s", n, out)
		}
		select {
		case <-attempts:
			n++
		case <-written:
		case <-p.done:
			t.Fatalf("old-only replica exited (%d) behind the marker:\n%s", p.status, p.out.String())
		case <-deadline:
			t.Fatalf("old-only replica: %d acquire attempts on the first node within 30s; want 5", n)
		}
	}
	code, status := runElect(t, nil, "status", "--backend="+old, "--election="+name)
	if code != 0 || !regexp.MustCompile(`migrated-to-etcd`).MatchString(status) {
		t.Errorf("elect status on the old URL: exit %d\n%s\nwant 0 and the marker migrated-to-etcd as the leader", code, status)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("old-only replica: exit %d after SIGTERM; want 0", code)
	}
	out := p.out.String()
	if strings.Contains(out, "COMMAND RAN") || strings.Contains(out, "campaign failed") || strings.Contains(out, "level=WARN") {
		t.Errorf("old-only replica behind the marker: want it waiting silently, its command not run; output:\n%s", out)
	}
}

// acquireAttempts watches the Redis node at addr (MONITOR) and reports
// each acquire attempt of the candidate identity: a call of the acquire
// script, which carries the identity as an argument of its own.
func acquireAttempts(t *testing.T, addr, identity string) <-chan struct{} {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	// Redis answers +OK once the connection is a monitor: every command
	// from then on is reported.
	if _, err := io.WriteString(c, "MONITOR\r\n"); err != nil {
		t.Fatal(err)
	}
	if l, err := r.ReadString('\n'); err != nil || l != "+OK\r\n" {
		t.Fatalf("MONITOR on %s: got %q, %v; want +OK", addr, l, err)
	}
	attempts := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if strings.Contains(l, `"eval`) && strings.Contains(l, `"`+identity+`"`) {
				select {
				case attempts <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = c.Close()
		<-done
	})
	return attempts
}
