//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaderkit/elector/cmd/elect/internal/testcmd"
	"github.com/leaderkit/elector/internal/testenv"
)

// hubEvent is a command of some elect starting ("hello"), receiving a
// signal ("signal", with sig) or dying ("bye").
type hubEvent struct {
	kind     string
	hello    bool // kind == "hello"
	identity string
	token    uint64
	sig      string
	conn     net.Conn
	at       time.Time // when the hub heard of the event
	// elected is when the term began (ELECT_TERM_START): unlike at, it
	// leaves out the start of the command's processes, which race-built
	// binaries make slow on a busy machine.
	elected time.Time
}

func (e hubEvent) String() string {
	return fmt.Sprintf("%s %s from %s (token %d)", e.kind, e.sig, e.identity, e.token)
}

// tell sends the command a line ("exit 3").
func (e hubEvent) tell(line string) { fmt.Fprintln(e.conn, line) }

// hub listens for the commands of the elect processes under test.
type hub struct {
	t      *testing.T
	ln     net.Listener
	events chan hubEvent
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newHub(t *testing.T) *hub {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hub{t: t, ln: ln, events: make(chan hubEvent, 100)}
	h.wg.Go(h.accept)
	t.Cleanup(func() {
		ln.Close()
		h.mu.Lock()
		for _, c := range h.conns {
			c.Close()
		}
		h.mu.Unlock()
		h.wg.Wait()
	})
	return h
}

func (h *hub) accept() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		h.conns = append(h.conns, c)
		h.mu.Unlock()
		h.wg.Go(func() {
			sc := bufio.NewScanner(c)
			if !sc.Scan() {
				return
			}
			f := strings.Fields(sc.Text())
			var elected time.Time
			if len(f) == 5 {
				elected, _ = time.Parse(time.RFC3339Nano, f[4])
			}
			if len(f) != 5 || f[0] != "hello" || elected.IsZero() {
				h.t.Errorf("child said %q; want hello identity token pid term-start", sc.Text())
				return
			}
			ev := hubEvent{identity: f[1], conn: c, elected: elected}
			ev.token, _ = strconv.ParseUint(f[2], 10, 64)
			send := func(kind, sig string) {
				e := ev
				e.kind, e.hello, e.sig, e.at = kind, kind == "hello", sig, time.Now()
				h.events <- e
			}
			send("hello", "")
			for sc.Scan() { // until the child dies (EOF) or cleanup
				if sig, ok := strings.CutPrefix(sc.Text(), "signal "); ok {
					send("signal", sig)
				}
			}
			send("bye", "")
		})
	}
}

// next returns the next event, failing the test after timeout.
func (h *hub) next(timeout time.Duration, what string) hubEvent {
	h.t.Helper()
	select {
	case e := <-h.events:
		return e
	case <-time.After(timeout):
		h.t.Fatalf("no event within %v; wanted %s", timeout, what)
		return hubEvent{}
	}
}

// childEnv is the environment that makes elect's command a hub child.
func (h *hub) childEnv() string { return testcmd.ChildAddrEnv + "=" + h.ln.Addr().String() }

// proc is an elect process.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	out    testenv.Buffer
	done   chan struct{}
	status int
}

// startElect starts elect with args and extra environment variables; the
// test's cleanup kills it if it still runs.
func startElect(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	return startElectOut(t, name, env, nil, args...)
}

// startElectOut is startElect with stdout going to stdout (nil: the output
// buffer, with stderr).
func startElectOut(t *testing.T, name string, env []string, stdout io.Writer, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, cmd: exec.Command(electBin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.status = p.cmd.ProcessState.ExitCode()
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.status = 128 + int(ws.Signal())
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", p.name, p.out.String())
		}
	})
	return p
}

// wait waits for the process to exit and returns its status.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.status
	case <-time.After(timeout):
		p.t.Fatalf("%s still runs after %v", p.name, timeout)
		return -1
	}
}

// awaitOutput waits until done reports that p's output (stdout and stderr)
// holds what the test waits for, and returns that output. It looks again
// at every write, and fails t when p exits first or after timeout.
func (p *proc) awaitOutput(timeout time.Duration, what string, done func(out string) bool) string {
	p.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		out, written := p.out.Next()
		if done(out) {
			return out
		}
		select {
		case <-written:
		case <-p.done:
			// Wait returns after the last write: the output is complete.
			if out := p.out.String(); done(out) {
				return out
			}
			p.t.Fatalf("%s exited (%d) before its output held %s:\n%s", p.name, p.status, what, p.out.String())
			return ""
		case <-deadline.C:
			p.t.Fatalf("%s: no %s in its output within %v:\n%s", p.name, what, timeout, p.out.String())
			return ""
		}
	}
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s: %v", p.name, err)
	}
}

// runElect runs elect to completion and returns its exit status and output.
func runElect(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	p := startElect(t, "elect", env, args...)
	return p.wait(30 * time.Second), p.out.String()
}

// lineFIFO makes a FIFO in a temporary directory and returns its path and
// the lines that processes write into it, as they are written. The test
// holds the FIFO open for reading and writing, so that writers never block
// on opening it and the reader never sees an end of file between them.
func lineFIFO(t *testing.T) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		_ = f.Close()
		<-done
	})
	return path, lines
}

// nextLines reads n lines from lines, failing t after timeout.
func nextLines(t *testing.T, lines <-chan string, n int, timeout time.Duration, what string) []string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var got []string
	for len(got) < n {
		select {
		case l := <-lines:
			got = append(got, l)
		case <-deadline.C:
			t.Fatalf("%s: %d of %d lines within %v: %q", what, len(got), n, timeout, got)
		}
	}
	return got
}
