package etcd

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// Candidates of the Go concurrency package and of this driver queue in one
// line, and each reports the other's leader.
func TestInteropConcurrency(t *testing.T) {
	t.Parallel()
	cli := testClient(t)
	b := testBackend(t, cli, nil)
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close() }()
	name := testName(t)
	upstream := concurrency.NewElection(sess, name)

	// Ours leads; upstream sees it and queues behind it.
	l := mustCampaign(t, b, unrenewed(name, "alice"))
	resp, err := upstream.Leader(testCtx(t))
	if err != nil || string(resp.Kvs[0].Value) != "alice" || uint64(resp.Kvs[0].CreateRevision) != l.Token() {
		t.Fatalf("concurrency Leader: got (%v, %v), want alice at revision %d", resp, err, l.Token())
	}
	won := make(chan error, 1)
	go func() { won <- upstream.Campaign(testCtx(t), "bob") }()
	select {
	case err := <-won:
		t.Fatalf("concurrency Campaign returned %v while ours led; want it waiting", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-won:
		if err != nil {
			t.Fatalf("concurrency Campaign: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("concurrency Campaign did not win after ours released")
	}
	h, err := b.Leader(testCtx(t), name)
	if err != nil || h.Identity != "bob" || h.Token != uint64(upstream.Rev()) || h.TTL <= 0 {
		t.Fatalf("Leader: got (%+v, %v), want bob with token %d and a TTL", h, err, upstream.Rev())
	}

	// Upstream leads; ours queues behind it.
	ch := campaignAsync(testCtx(t), b, unrenewed(name, "carol"))
	queued(t, b, name, 2, ch)
	if err := upstream.Resign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	r := await(t, ch, 10*time.Second)
	if r.err != nil {
		t.Fatalf("Campaign after concurrency's Resign: %v", r.err)
	}
	if r.l.Token() <= uint64(upstream.Rev()) {
		t.Errorf("token after concurrency's term: got %d, want > %d", r.l.Token(), upstream.Rev())
	}
	if err := r.l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// etcdctl (Debian's etcd-client, v3.4) observes our leader, and its
// candidates queue with ours in both directions.
func TestInteropEtcdctl(t *testing.T) {
	t.Parallel()
	endpoints := testenv.EtcdEndpoints(t)
	if _, err := exec.LookPath("etcdctl"); err != nil {
		t.Fatalf("etcdctl not installed (Debian etcd-client): %v", err)
	}
	cli := testClient(t)
	b := testBackend(t, cli, nil)
	name := testName(t)
	l := mustCampaign(t, b, unrenewed(name, "alice"))

	observer := startEtcdctl(t, endpoints, "elect", "-l", name)
	observer.expect(t, "alice", 15*time.Second)
	observer.stop(t)

	bob := startEtcdctl(t, endpoints, "elect", name, "bob")
	bob.quiet(t, 300*time.Millisecond)
	if err := l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	bob.expect(t, "bob", 15*time.Second)
	h, err := b.Leader(testCtx(t), name)
	if err != nil || h.Identity != "bob" {
		t.Fatalf("Leader while etcdctl leads: got (%+v, %v), want bob", h, err)
	}
	ch := campaignAsync(testCtx(t), b, unrenewed(name, "carol"))
	queued(t, b, name, 2, ch)
	bob.stop(t) // SIGINT: etcdctl resigns
	r := await(t, ch, 15*time.Second)
	if r.err != nil {
		t.Fatalf("Campaign after etcdctl resigned: %v", r.err)
	}
	if r.l.Token() <= h.Token {
		t.Errorf("token after etcdctl's term: got %d, want > %d", r.l.Token(), h.Token)
	}
	if err := r.l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// unrenewed is a candidate whose lease nothing renews while the test runs
// other clients (processes, on a loaded machine): its TTL outlasts them.
func unrenewed(election, id string) backend.Candidate {
	return backend.Candidate{Election: election, Identity: id, TTL: 30 * time.Second}
}

// etcdctl is a running etcdctl process and its output lines.
type etcdctl struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
}

func startEtcdctl(t *testing.T, endpoints []string, args ...string) *etcdctl {
	t.Helper()
	args = append([]string{"--endpoints", strings.Join(endpoints, ",")}, args...)
	cmd := exec.Command("etcdctl", args...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &etcdctl{cmd: cmd, lines: make(chan string, 100), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			e.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { e.stop(t) })
	return e
}

// expect waits for an output line equal to want.
func (e *etcdctl) expect(t *testing.T, want string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case line := <-e.lines:
			if line == want {
				return
			}
		case <-e.done:
			t.Fatalf("etcdctl %v exited before printing %q", e.cmd.Args[1:], want)
		case <-timeout:
			t.Fatalf("etcdctl %v: no line %q within %v", e.cmd.Args[1:], want, d)
		}
	}
}

// quiet asserts that etcdctl prints nothing for d.
func (e *etcdctl) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case line := <-e.lines:
		t.Fatalf("etcdctl %v printed %q, want it waiting", e.cmd.Args[1:], line)
	case <-time.After(d):
	}
}

// stop interrupts etcdctl (elect resigns on SIGINT) and waits for it.
func (e *etcdctl) stop(t *testing.T) {
	if e.cmd.ProcessState != nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGINT)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	select {
	case <-e.done:
	case <-ctx.Done():
		_ = e.cmd.Process.Kill()
		<-e.done
	}
	_ = e.cmd.Wait()
}
