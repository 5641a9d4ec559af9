//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// termsDirEnv, when set, makes the test binary act as a command that
// counts its SIGTERMs: each process writes one line "TERM" per SIGTERM to
// a file of its own in that directory. The first SIGTERM starts a clean
// stop that takes termsLinger; a second one during it is taken as "force
// quit", as elect and many servers do: the process exits 3 at once.
const termsDirEnv = "ELECTTEST_TERMS_DIR"

// termsRoleEnv is the role of a SIGTERM-counting process: empty for
// COMMAND itself, which starts termsMembers processes in its process group
// and one in a session of its own, then "member" or "outsider".
const termsRoleEnv = "ELECTTEST_TERMS_ROLE"

const (
	termsMembers = 12
	termsLinger  = 300 * time.Millisecond
)

// termsMain is the SIGTERM-counting command; it returns its exit code: 0
// after a clean stop (for COMMAND, only if every process it started
// stopped cleanly too), 3 after a second SIGTERM.
func termsMain(dir string) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM)
	role := os.Getenv(termsRoleEnv)
	var kids []*exec.Cmd
	if role == "" {
		role = "command"
		for i := range termsMembers + 1 {
			kid := exec.Command(os.Args[0])
			kid.Env = append(os.Environ(), termsRoleEnv+"=member")
			if i == termsMembers {
				kid.Env = append(os.Environ(), termsRoleEnv+"=outsider")
				kid.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			}
			if err := kid.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "terms:", err)
				return 1
			}
			kids = append(kids, kid)
		}
	}
	// The file appears once the handler is in place: the test sends
	// nothing before every file is there.
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d", role, os.Getpid())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "terms:", err)
		return 1
	}
	defer f.Close()
	<-sigs
	fmt.Fprintln(f, "TERM")
	code := make(chan int, 1)
	go func() { // the clean stop
		time.Sleep(termsLinger)
		c := 0
		for _, kid := range kids {
			if kid.Wait() != nil {
				c = 1
			}
		}
		code <- c
	}()
	select {
	case c := <-code:
		return c
	case <-sigs:
		fmt.Fprintln(f, "TERM")
		return 3
	}
}

// TestStopSendsOneSIGTERMPerProcess: when elect stops, every process of
// COMMAND's tree gets exactly one SIGTERM, the members of COMMAND's
// process group and a process that left it alike, and a command that
// takes a second SIGTERM as "force quit" stops cleanly within --grace.
// Before the fix the watchdog signalled the group, then every descendant
// again, members included: a member that had taken the first SIGTERM in
// between counted two. Whether it had depends on scheduling; with a dozen
// members, most stops show it.
func TestStopSendsOneSIGTERMPerProcess(t *testing.T) {
	dir := t.TempDir()
	marker := fmt.Sprintf("ELECTTEST_TREE=%s-%d", t.Name(), time.Now().UnixNano())
	p := startBin(t, electBin, []string{marker, termsDirEnv + "=" + dir, "GORACE=atexit_sleep_ms=0"},
		"run", "--grace=30s", "--backend="+backendURL(t, "redis", nil), "--election="+election(t), "--", testBin(t))
	t.Cleanup(func() {
		for _, pid := range marked(marker, p.cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	want := termsMembers + 2
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ents, _ := os.ReadDir(dir); len(ents) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command's %d processes did not all start within 30s", want)
		}
	}
	p.signal(syscall.SIGTERM)
	// Far less than --grace: a SIGKILL at the end of the grace fails here.
	if code := p.wait(15 * time.Second); code != 0 {
		t.Errorf("elect stopped by SIGTERM: exit %d, want 0", code)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "TERM"); n != 1 {
			t.Errorf("process %s got %d SIGTERMs; want exactly 1", e.Name(), n)
		}
	}
	out := p.out.String()
	if !strings.Contains(out, `msg="command stopped" status=0`) || strings.Contains(out, "did not stop within the grace period") {
		t.Errorf("elect's output: want the command stopped cleanly with status 0 within --grace:\n%s", out)
	}
}

// TestSignalTreeSignalsEachProcessOnce: the watchdog's signalTree reaches
// each process of a real tree exactly once: the members of the command's
// process group, grandchildren included, through one kill of the group
// and never again by PID; the processes outside the group (one in a
// session of its own, one in a group of its own) by PID, once each. The
// kills are recorded rather than sent, with this test process as the
// watchdog, so that the outcome does not depend on when the processes
// take their signals.
func TestSignalTreeSignalsEachProcessOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the watchdog finds the processes outside the group through /proc")
	}
	pidFile := filepath.Join(t.TempDir(), "pids")
	script := `echo "member $$" >> "$PIDS"
sleep 1000 & echo "member $!" >> "$PIDS"
sh -c 'echo "member $$" >> "$PIDS"; sleep 1000 & echo "member $!" >> "$PIDS"; wait' &
setsid sh -c 'echo "outsider $$" >> "$PIDS"; exec sleep 1000' &
perl -e 'setpgrp(0, 0); exec "sh", "-c", q(echo "outsider $$" >> "$PIDS"; exec sleep 1000)' &
wait`
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PIDS="+pidFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	role := map[int]string{}
	for deadline := time.Now().Add(20 * time.Second); len(role) < 6; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the tree did not start within 20s: %v", role)
		}
		b, _ := os.ReadFile(pidFile)
		clear(role)
		for l := range strings.Lines(string(b)) {
			if r, pid, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
				n, _ := strconv.Atoi(pid)
				role[n] = r
			}
		}
	}
	for pid, r := range role {
		g, err := syscall.Getpgid(pid)
		if err != nil || (g == pgid) != (r == "member") {
			t.Fatalf("process %d (%s) is in group %d (%v); the test needs members in %d and outsiders elsewhere", pid, r, g, err, pgid)
		}
		if r == "outsider" {
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
	}

	var mu sync.Mutex
	sent := map[int]int{} // kills per target: -pgid for the group
	w := &watch{pgid: pgid, root: os.Getpid(), kill: func(pid int, sig syscall.Signal) error {
		if sig != syscall.SIGTERM {
			t.Errorf("kill(%d, %v); want SIGTERM", pid, sig)
		}
		mu.Lock()
		sent[pid]++
		mu.Unlock()
		return nil
	}}
	w.signalTree(syscall.SIGTERM)
	if n := sent[-pgid]; n != 1 {
		t.Errorf("the command's process group was signalled %d times; want 1", n)
	}
	for pid, r := range role {
		want := 0 // the group's kill reaches it
		if r == "outsider" {
			want = 1
		}
		if n := sent[pid]; n != want {
			t.Errorf("%s %d was signalled %d times by PID; want %d (it gets 1 SIGTERM in all)", r, pid, n, want)
		}
	}
}
