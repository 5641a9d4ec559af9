//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/internal/testenv"
)

// TestSignalsAndOnExit checks, on one leader: forwarded signals reach the
// command; --on-exit=restart runs it again in the same term; the default
// policy (exit) gives the lease up and exits with the command's status.
func TestSignalsAndOnExit(t *testing.T) {
	h := newHub(t)
	url, elec := backendURL(t, "redis", nil), election(t)
	// A TTL that a loaded machine does not cost the term of: the restart
	// must come in the same term.
	p := startElect(t, "leader", []string{h.childEnv()}, "run", "--ttl=20s", "--on-exit=restart", "--restart-delay=10ms",
		"--backend="+url, "--election="+elec, "--identity=leader", "--", cmdBin)
	first := h.next(20*time.Second, "the command to start")
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1} {
		p.signal(sig)
		if e := h.next(5*time.Second, "the forwarded "+sig.String()); e.kind != "signal" || !strings.Contains(strings.ToLower(e.sig), strings.ToLower(sig.String())) {
			t.Errorf("after %v to elect: got %v, want the command to receive it", sig, e)
		}
	}
	first.tell("exit 3")
	if e := h.next(5*time.Second, "the command to exit"); e.kind != "bye" {
		t.Fatalf("got %v, want a bye", e)
	}
	// Starting it again starts a watchdog and the command, two race-built
	// processes: as slow on a loaded machine as the first start.
	again := h.next(20*time.Second, "the command to run again (--on-exit=restart)")
	if again.kind != "hello" || again.token != first.token {
		t.Fatalf("got %v, want a hello in the same term (token %d)", again, first.token)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("elect stopped by SIGTERM: exit %d, want 0", code)
	}
	h.next(5*time.Second, "the restarted command's bye")

	p = startElect(t, "exiting", []string{h.childEnv()}, "run", "--ttl=20s",
		"--backend="+url, "--election="+elec, "--identity=exiting", "--", cmdBin)
	e := h.next(20*time.Second, "the command to start")
	e.tell("exit 5")
	if code := p.wait(10 * time.Second); code != 5 {
		t.Errorf("the command exited 5 (--on-exit=exit): elect exit %d, want 5", code)
	}
	h.next(5*time.Second, "the command's bye")
	code, out := runElect(t, nil, "status", "--backend="+url, "--election="+elec)
	if code != exitNoLeader || !strings.Contains(out, "no leader") {
		t.Errorf("status after the exit: got %d %q, want 1 and no leader: the lease is given up", code, out)
	}
}

// TestStatusWatchAndMetrics watches an election while a replica leads and
// stops, checks status in text and JSON, and scrapes /metrics and /healthz.
func TestStatusWatchAndMetrics(t *testing.T) {
	for _, name := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHub(t)
			url, elec := backendURL(t, name, nil), election(t)
			if name == "redis" {
				// A campaign that misses a majority by the default 100 ms
				// timeout on a loaded machine is retried with the next token:
				// the checks below expect one term.
				url += "&request_timeout=1s"
			}
			w := startElectPipe(t, "watch", nil, "watch", "--json", "--backend="+url, "--election="+elec)
			if got := w.nextLine(20 * time.Second); !strings.Contains(got, `"leader":false`) {
				t.Fatalf("watch's first line: got %q, want no leader", got)
			}
			addr := freeAddr(t)
			// A TTL that a loaded machine does not cost the term of: the
			// checks below expect one term.
			p := startElect(t, "leader", []string{h.childEnv()}, "run", "--ttl=20s", "--metrics-addr="+addr,
				"--backend="+url, "--election="+elec, "--identity=the-leader", "--", cmdBin)
			hello := h.next(20*time.Second, "the command to start")

			var j holderJSON
			if err := json.Unmarshal([]byte(w.nextLine(10*time.Second)), &j); err != nil || !j.Leader || j.Identity != "the-leader" || j.Token != hello.token {
				t.Errorf("watch: got %+v (%v), want the-leader with token %d", j, err, hello.token)
			}
			code, out := runElect(t, nil, "status", "--backend="+url, "--election="+elec)
			if want := fmt.Sprintf("leader of %q: the-leader (token %d", elec, hello.token); code != 0 || !strings.Contains(out, want) {
				t.Errorf("status: got %d %q, want 0 and %q", code, out, want)
			}
			code, out = runElect(t, nil, "status", "--json", "--backend="+url, "--election="+elec)
			if err := json.Unmarshal([]byte(out), &j); code != 0 || err != nil || j.Identity != "the-leader" || j.Election != elec {
				t.Errorf("status --json: got %d %q (%v), want 0 and the-leader", code, out, err)
			}

			metrics := get(t, "http://"+addr+"/metrics")
			for _, want := range []string{
				fmt.Sprintf(`elector_is_leader{election=%q} 1`, elec),
				fmt.Sprintf(`elector_terms_total{election=%q} 1`, elec),
				fmt.Sprintf(`elector_campaign_duration_seconds_count{election=%q,result="won"} 1`, elec),
				"go_goroutines",
			} {
				if !strings.Contains(metrics, want) {
					t.Errorf("/metrics lacks %q", want)
				}
			}
			if got := get(t, "http://"+addr+"/healthz"); got != "ok\n" {
				t.Errorf("/healthz: got %q, want ok", got)
			}

			p.signal(syscall.SIGTERM)
			if code := p.wait(10 * time.Second); code != 0 {
				t.Errorf("elect stopped by SIGTERM: exit %d, want 0", code)
			}
			if got := w.nextLine(10 * time.Second); !strings.Contains(got, `"leader":false`) {
				t.Errorf("watch after the leader stopped: got %q, want no leader", got)
			}
			w.signal(syscall.SIGINT)
			if code := w.wait(10 * time.Second); code != 0 {
				t.Errorf("watch stopped by SIGINT: exit %d, want 0", code)
			}
		})
	}
}

// pipeProc is an elect process whose stdout the test reads line by line.
type pipeProc struct {
	*proc
	lines chan string
}

func startElectPipe(t *testing.T, name string, env []string, args ...string) *pipeProc {
	t.Helper()
	r, w := io.Pipe()
	p := &pipeProc{lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	p.proc = startElectOut(t, name, env, w, args...)
	t.Cleanup(func() { w.Close() })
	return p
}

func (p *pipeProc) nextLine(timeout time.Duration) string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("%s: stdout closed", p.name)
		}
		return l
	case <-time.After(timeout):
		p.t.Fatalf("%s: no line within %v", p.name, timeout)
		return ""
	}
}

// freeAddr returns a 127.0.0.1 address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// TestOnExitResign: when the command exits under --on-exit=resign, the
// leader hands the election to the other replica at once and stays a
// candidate.
func TestOnExitResign(t *testing.T) {
	h := newHub(t)
	url, elec := backendURL(t, "zk", nil), election(t)
	// A lease left to lapse instead, renewed at most a RenewInterval
	// (TTL/3) before the exit, would elect b past half the TTL: seconds
	// after a resignation does on a loaded machine.
	const ttl = 20 * time.Second
	args := func(id string) []string {
		return []string{"run", "--ttl=" + ttl.String(), "--on-exit=resign", "--backend=" + url, "--election=" + elec, "--identity=" + id, "--", cmdBin}
	}
	a := startElect(t, "a", []string{h.childEnv()}, args("a")...)
	first := h.next(20*time.Second, "a's command to start")
	b := startElect(t, "b", []string{h.childEnv()}, args("b")...)
	awaitZKCandidates(t, elec, 2, 20*time.Second) // b queues behind a
	first.tell("exit 0")
	bye := h.next(5*time.Second, "a's command to exit")
	if bye.kind != "bye" {
		t.Fatalf("got %v, want a bye", bye)
	}
	exited := bye.at // timed from the exit, not from the message asking for it
	// Only b's election is timed (below); its command's start is a fork and
	// exec of a race-built binary, which a loaded machine delays by seconds.
	second := h.next(20*time.Second, "b's command to start")
	if second.kind != "hello" || second.identity != "b" || second.token <= first.token {
		t.Fatalf("got %v, want b's hello with a token above %d", second, first.token)
	}
	// Timed to b's election, from its log: starting its command is a fork
	// and exec, which a loaded machine can delay by seconds.
	out := b.awaitOutput(5*time.Second, "its election", func(out string) bool { return strings.Contains(out, "msg=elected") })
	m := regexp.MustCompile(`time=(\S+) level=INFO msg=elected`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("b's output: no time on its elected line:\n%s", out)
	}
	elected, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatalf("b's elected line: %v", err)
	}
	if took := elected.Sub(exited); took >= ttl/2 {
		t.Errorf("b was elected %v after a's command exited; want within half the TTL (%v): a resigned", took, ttl)
	}
	select {
	case <-a.done:
		t.Errorf("a exited (%d) after resigning; want it to stay a candidate", a.status)
	default:
	}
	for _, p := range []*proc{a, b} {
		p.signal(syscall.SIGTERM)
		if code := p.wait(10 * time.Second); code != 0 {
			t.Errorf("%s stopped by SIGTERM: exit %d, want 0", p.name, code)
		}
	}
}

// awaitZKCandidates waits until n candidates queue in election elec of
// backendURL's zk URL: a process started is not yet a candidate.
func awaitZKCandidates(t *testing.T, elec string, n int, timeout time.Duration) {
	t.Helper()
	conn, _, err := zk.Connect(testenv.ZKServers(t), 5*time.Second, zk.WithLogger(testenv.NewLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	path := "/elect-test/" + elec
	for {
		children, _, changed, err := conn.ChildrenW(path)
		if err != nil {
			t.Fatalf("zookeeper: children of %s: %v", path, err)
		}
		latches := 0
		for _, c := range children {
			if strings.Contains(c, "-latch-") {
				latches++
			}
		}
		if latches >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("zookeeper: %d candidates in %s after %v; want %d", latches, path, timeout, n)
		}
	}
}
