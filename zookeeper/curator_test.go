package zookeeper

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Curator's classpath from Debian's libcurator-recipes-java (the jar
// manifests chain to curator-framework, curator-client, guava and
// zookeeper), with slf4j-nop to silence its logging.
const curatorClasspath = "/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar"

// latchPeer is a running testdata/LatchPeer.java: one Curator client and
// LeaderLatch.
type latchPeer struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

// compileLatchPeer compiles testdata/LatchPeer.java into a temporary
// directory and returns it.
func compileLatchPeer(t *testing.T) string {
	dir := t.TempDir()
	cmd := exec.Command("javac", "-cp", curatorClasspath, "-d", dir, filepath.Join("testdata", "LatchPeer.java"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("javac LatchPeer.java (needs Java 17 and libcurator-recipes-java): %v\n%s", err, out)
	}
	return dir
}

// startLatchPeer runs a LatchPeer on latch path path with id, and waits for
// its client to connect.
func startLatchPeer(t *testing.T, classes string, servers []string, path, id string) *latchPeer {
	cmd := exec.Command("java", "-XX:TieredStopAtLevel=1", "-cp", classes+":"+curatorClasspath,
		"LatchPeer", strings.Join(servers, ","), path, id)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting LatchPeer: %v", err)
	}
	p := &latchPeer{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Process.Kill(); err == nil {
			for range p.lines {
			}
			_ = cmd.Wait()
		}
	})
	p.expect("READY", 30*time.Second)
	return p
}

func (p *latchPeer) send(cmd string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		p.t.Fatalf("LatchPeer %s: %v", cmd, err)
	}
}

// expect waits up to d for a line starting with prefix and returns it.
func (p *latchPeer) expect(prefix string, d time.Duration) string {
	p.t.Helper()
	timeout := time.After(d)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("LatchPeer exited, want %q", prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
			if strings.HasPrefix(line, "ERROR") {
				p.t.Fatalf("LatchPeer: %s", line)
			}
		case <-timeout:
			p.t.Fatalf("LatchPeer: no %q within %v", prefix, d)
		}
	}
}

// quiet asserts that no line starting with prefix arrives within d.
func (p *latchPeer) quiet(prefix string, d time.Duration) {
	p.t.Helper()
	timeout := time.After(d)
	for {
		select {
		case line := <-p.lines:
			if strings.HasPrefix(line, prefix) {
				p.t.Fatalf("LatchPeer said %q while elector held the election, want it to wait", line)
			}
		case <-timeout:
			return
		}
	}
}

// TestCurator runs elector and Curator's LeaderLatch in one election: each
// reports the other as leader, waits behind the other, and is handed the
// election when the other releases it.
func TestCurator(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	t.Cleanup(h.Close)
	classes := compileLatchPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("CuratorLeadsElectorWaits", func(t *testing.T) {
		election := "interop/curator-leads-" + randomSuffix()
		peer := startLatchPeer(t, classes, h.servers, testPrefix+"/"+election, "curator-1")
		b, _, err := h.newBackend(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()

		peer.send("start")
		peer.expect("LEADER", 10*time.Second)
		hd, err := b.Leader(ctx, election)
		if err != nil || hd.Identity != "curator-1" {
			t.Fatalf("Leader: got (%+v, %v), want Curator's id curator-1: elector reads LeaderLatch nodes", hd, err)
		}
		ch := make(chan result, 1)
		go func() {
			l, err := b.Campaign(ctx, backend.Candidate{Election: election, Identity: "go-1", TTL: testTTL})
			ch <- result{l, err, time.Now()}
		}()
		select {
		case r := <-ch:
			t.Fatalf("Campaign returned (%v, %v) while Curator leads, want it to wait", r.l != nil, r.err)
		case <-time.After(500 * time.Millisecond):
		}
		closed := time.Now()
		peer.send("close")
		peer.expect("CLOSED", 5*time.Second)
		var r result
		select {
		case r = <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("Campaign: no lease within 5s of Curator closing its latch, want a prompt hand-over")
		}
		if r.err != nil {
			t.Fatalf("Campaign after Curator's close: %v", r.err)
		}
		t.Logf("Curator → elector hand-over: %v after close was sent", r.at.Sub(closed))
		if r.l.Token() <= hd.Token {
			t.Fatalf("token: got %d, want > Curator leader's czxid %d", r.l.Token(), hd.Token)
		}
		// A new Curator latch now reports the elector leader and waits.
		peer.send("start")
		peer.expect("STARTED", 5*time.Second)
		peer.send("leader")
		if got := peer.expect("LEADERID", 5*time.Second); got != "LEADERID go-1" {
			t.Fatalf("Curator getLeader: got %q, want LEADERID go-1", got)
		}
		if err := r.l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		peer.expect("LEADER", 5*time.Second)
		peer.send("quit")
		peer.expect("BYE", 5*time.Second)
	})

	t.Run("ElectorLeadsCuratorWaits", func(t *testing.T) {
		election := "interop/elector-leads-" + randomSuffix()
		b, _, err := h.newBackend(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		l, err := b.Campaign(ctx, backend.Candidate{Election: election, Identity: "go-1", TTL: testTTL})
		if err != nil {
			t.Fatal(err)
		}
		peer := startLatchPeer(t, classes, h.servers, testPrefix+"/"+election, "curator-1")
		peer.send("start")
		peer.expect("STARTED", 5*time.Second)
		peer.quiet("LEADER", time.Second)
		peer.send("leader")
		if got := peer.expect("LEADERID", 5*time.Second); got != "LEADERID go-1" {
			t.Fatalf("Curator getLeader: got %q, want LEADERID go-1", got)
		}
		released := time.Now()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		peer.expect("LEADER", 5*time.Second)
		t.Logf("elector → Curator hand-over: %v after Release began", time.Since(released))
		hd, err := b.Leader(ctx, election)
		if err != nil || hd.Identity != "curator-1" || hd.Token <= l.Token() {
			t.Fatalf("Leader: got (%+v, %v), want curator-1 with a token > %d", hd, err, l.Token())
		}
		// elector now waits behind Curator and is handed the election back.
		ch := make(chan result, 1)
		go func() {
			l, err := b.Campaign(ctx, backend.Candidate{Election: election, Identity: "go-2", TTL: testTTL})
			ch <- result{l, err, time.Now()}
		}()
		peer.send("close")
		peer.expect("CLOSED", 5*time.Second)
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("Campaign after Curator's close: %v", r.err)
			}
			if r.l.Token() <= hd.Token {
				t.Fatalf("token: got %d, want > %d", r.l.Token(), hd.Token)
			}
			if err := r.l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Campaign: no lease within 5s of Curator closing, want a prompt hand-over")
		}
		peer.send("quit")
		peer.expect("BYE", 5*time.Second)
	})
}

// result is the outcome of a background Campaign.
type result struct {
	l   backend.Lease
	err error
	at  time.Time
}
