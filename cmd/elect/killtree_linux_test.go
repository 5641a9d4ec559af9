package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// treeScript is a command whose tree holds, besides the shell itself, a
// grandchild that ignores SIGTERM and one that has left the command's
// process group and session (setsid). Each writes its PID to $PIDS, a
// FIFO the test reads. The
// grandchildren do not hold elect's output open, so that a test sees
// elect exit even while they run.
const treeScript = `trap "" TERM
sleep 1000 >/dev/null 2>&1 & echo $! >> "$PIDS"
setsid sh -c 'echo $$ >> "$PIDS"; exec sleep 1000' >/dev/null 2>&1 &
echo $$ >> "$PIDS"
wait`

// startTree starts elect running treeScript, waits until the whole tree
// runs, and returns elect, the PIDs of the tree, and the environment entry
// that marks every process of the tree and elect's helpers. The test's cleanup kills whatever of the tree is
// left, so that a failing run leaves nothing behind.
func startTree(t *testing.T, bin string, extra ...string) (*treeElect, []int, string) {
	t.Helper()
	marker := fmt.Sprintf("ELECTTEST_TREE=%s-%d", t.Name(), time.Now().UnixNano())
	pidFile, lines := lineFIFO(t)
	// A TTL that a loaded machine does not cost the term of: a new term
	// would start another tree.
	args := append([]string{"run", "--ttl=20s", "--backend=" + backendURL(t, "redis", nil), "--election=" + election(t)}, extra...)
	// GORACE: a binary built with -race, as the tests build elect, sleeps
	// a second before it exits; the watchdog must not.
	env := []string{marker, "PIDS=" + pidFile, "GORACE=atexit_sleep_ms=0"}
	p := startBin(t, bin, env, append(args, "--", "sh", "-c", treeScript)...)
	t.Cleanup(func() {
		for _, pid := range marked(marker, p.cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	pids := checkTree(t, nextLines(t, lines, 3, 20*time.Second, "the PIDs of the command's tree"))
	if len(pids) != 3 {
		t.Fatalf("processes with the mark: got %v, want the tree's 3 and at most a watchdog", pids)
	}
	all := marked(marker, p.cmd.Process.Pid)
	if len(all) < 3 || len(all) > 4 {
		t.Fatalf("processes with the mark: got %v, want the tree's 3 and at most a watchdog", all)
	}
	return p, pids, marker
}

// treeElect is an elect process whose exit the test times.
type treeElect struct {
	*proc
	exited time.Time // when elect's exit reached the test; set before done closes
}

// startBin is startElect with another build of elect, and with its output
// in a file rather than a pipe: elect's exit reaches the test at once,
// without waiting for the processes that share its output to die.
func startBin(t *testing.T, bin string, env []string, args ...string) *treeElect {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "output"))
	if err != nil {
		t.Fatal(err)
	}
	p := &treeElect{proc: &proc{t: t, name: "elect", cmd: exec.Command(bin, args...), done: make(chan struct{})}}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.exited = time.Now()
		p.status = p.cmd.ProcessState.ExitCode()
		b, _ := os.ReadFile(out.Name())
		_, _ = p.out.Write(b)
		out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("output of elect:\n%s", p.out.String())
		}
	})
	return p
}

// plainElect returns elect built without the race detector, beside the
// race-enabled build (TestMain removes both). The race detector makes a
// killed process take tens of milliseconds longer to exit (it has far more
// memory to unmap): the test would measure the detector rather than elect.
// TestMain starts the build (buildPlain) in the background; plainElect waits
// for it.
func plainElect(t *testing.T) string {
	<-plainDone
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainBin
}

func init() { backgroundBuilds = append(backgroundBuilds, buildPlain) }

// buildPlain builds elect without the race detector into plainBin, or
// records why it could not in plainErr; it closes plainDone.
func buildPlain() {
	defer close(plainDone)
	bin := filepath.Join(filepath.Dir(electBin), "elect-plain")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		plainErr = fmt.Errorf("go build: %v\n%s", err, out)
		return
	}
	plainBin = bin
}

var (
	plainDone = make(chan struct{}) // closed when buildPlain has ended
	plainBin  string
	plainErr  error
)

// checkTree makes sure the tree is the one the tests need: a grandchild
// that ignores SIGTERM, and one in a session of its own. It returns the
// PIDs.
func checkTree(t *testing.T, pids []string) []int {
	t.Helper()
	ignoresTerm, ownSession := false, false
	var out []int
	for _, s := range pids {
		pid, _ := strconv.Atoi(s)
		out = append(out, pid)
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatalf("process %d of the tree: %v", pid, err)
		}
		for l := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
				mask, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				ignoresTerm = ignoresTerm || mask&(1<<(syscall.SIGTERM-1)) != 0
			}
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// PID (COMM) STATE PPID PGRP SESSION ...
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 3 && f[3] == s {
			ownSession = true
		}
	}
	if !ignoresTerm || !ownSession {
		t.Fatalf("the tree %v has a process ignoring SIGTERM: %v, one in its own session: %v; want both", pids, ignoresTerm, ownSession)
	}
	return out
}

// alive returns those of pids that still run (a zombie has died).
func alive(pids []int) []int {
	var out []int
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:]); len(f) > 0 && string(f[0]) != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

// marked returns the live processes, other than except, whose environment
// holds marker: the command's tree (and elect's helpers).
func marked(marker string, except int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == except || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+marker+"\x00")) {
			continue // gone, a zombie (empty environ), or not ours
		}
		out = append(out, pid)
	}
	return out
}

// exit is a process's exit as exits reports it.
type exit struct {
	pid int
	at  time.Time // when the test saw the process exit
	ok  bool      // false: it still ran 10 s after exits was called
}

// exits watches each of pids through a pidfd, which becomes readable when
// the process exits (child or not), and reports each exit as it happens:
// one exit per PID, ok false for a process still running after 10 s. A
// process already gone when exits is called is reported at once.
func exits(t *testing.T, pids []int) <-chan exit {
	t.Helper()
	out := make(chan exit, len(pids))
	end := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err == unix.ESRCH {
			out <- exit{pid: pid, at: time.Now(), ok: true}
			continue
		} else if err != nil {
			t.Fatalf("pidfd_open %d: %v", pid, err)
		}
		go func() {
			defer unix.Close(fd)
			for {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				n, err := unix.Poll(fds, max(int(time.Until(end).Milliseconds()), 0))
				switch {
				case err == unix.EINTR:
					continue
				case n == 1:
					out <- exit{pid: pid, at: time.Now(), ok: true}
				default:
					out <- exit{pid: pid}
				}
				return
			}
		}()
	}
	return out
}

// describe names the processes for a failure message.
func describe(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		fmt.Fprintf(&b, "\n  %s  [%s]", strings.TrimSpace(string(stat)), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	return b.String()
}

// TestKill9KillsTheWholeTree: when elect dies of SIGKILL, every process of
// the command's tree dies at once, even a grandchild that ignores SIGTERM
// and one that called setsid, not after --grace (here a minute). Otherwise
// they run on while the next leader, elected one TTL later, starts its own
// copy. The test allows 5 s, which stalls of the watchdog or of the test on
// a loaded machine do not reach, counted from elect's death as its parent
// sees it: on a busy machine the kernel may take a while to tear elect down
// after the signal, and nothing can act before it has.
func TestKill9KillsTheWholeTree(t *testing.T) {
	p, _, marker := startTree(t, plainElect(t), "--grace=1m")
	tree := marked(marker, p.cmd.Process.Pid) // the watchdog too
	desc := map[int]string{}
	for _, pid := range tree {
		desc[pid] = describe([]int{pid})
	}
	exited := exits(t, tree)
	killed := time.Now()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var last exit // the last process of the tree to exit
	for range tree {
		e := <-exited
		if !e.ok {
			t.Fatalf("10s after SIGKILL to elect, a process of the command's tree still runs:%s", desc[e.pid])
		}
		if e.at.After(last.at) {
			last = e
		}
	}
	gone := last.at
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("elect still runs 10s after SIGKILL")
	}
	t.Logf("after SIGKILL: elect had exited after %v, the tree was gone %v later",
		p.exited.Sub(killed).Round(time.Millisecond), gone.Sub(p.exited).Round(time.Millisecond))
	if late := gone.Sub(p.exited); late > 5*time.Second {
		t.Errorf("%v after elect had died of SIGKILL, a process of the command's tree still ran:%s", late.Round(time.Millisecond), desc[last.pid])
	}
	if left := marked(marker, p.cmd.Process.Pid); len(left) != 0 {
		t.Errorf("the tree is gone, but %d other processes with its mark run:%s", len(left), describe(left))
	}
}

// TestStopKillsTheWholeTree: when elect stops normally, the tree gets
// SIGTERM, then SIGKILL after --grace, and nothing of it is left once elect
// has exited, not even what left the command's process group.
func TestStopKillsTheWholeTree(t *testing.T) {
	p, tree, marker := startTree(t, electBin, "--grace=300ms")
	helpers := marked(marker, p.cmd.Process.Pid) // the tree and the watchdog
	desc := map[int]string{}
	for _, pid := range helpers {
		desc[pid] = describe([]int{pid})
	}
	exited := exits(t, helpers)
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("elect stopped by SIGTERM: exit %d, want 0", code)
	}
	if left := alive(tree); len(left) != 0 {
		t.Errorf("elect has exited, but %d processes of the command's tree still run:%s", len(left), describe(left))
	}
	for range helpers {
		if e := <-exited; !e.ok || e.at.Sub(p.exited) > 5*time.Second {
			t.Fatalf("5s after elect exited, one of its helpers still ran:%s", desc[e.pid])
		}
	}
	if left := marked(marker, p.cmd.Process.Pid); len(left) != 0 {
		t.Errorf("elect and its helpers have exited, but %d other processes with the mark run:%s", len(left), describe(left))
	}
	if !strings.Contains(p.out.String(), "did not stop within the grace period") {
		t.Errorf("elect's output lacks the grace period warning (the shell ignores SIGTERM):\n%s", p.out.String())
	}
}

// TestCommandInheritsStdioAndSignals: the command reads elect's stdin,
// writes to elect's stdout, and starts with the signal dispositions elect
// had: nothing elect or its helpers do turns a signal off for it.
func TestCommandInheritsStdioAndSignals(t *testing.T) {
	cmd := exec.Command(electBin, "run", "--once", "--wait=2s", "--hold=2s", "--backend="+backendURL(t, "redis", nil),
		"--election="+election(t), "--", "sh", "-c", `read line; echo "got $line"; exec grep SigIgn /proc/self/status`)
	cmd.Stdin = strings.NewReader("hello\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("elect: %v\n%s", err, stderr.String())
	}
	own, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for l := range strings.Lines(string(own)) {
		if strings.HasPrefix(l, "SigIgn:") {
			want = l
		}
	}
	if got := stdout.String(); got != "got hello\n"+want {
		t.Errorf("the command's stdout: got %q, want %q (stdin read, and SigIgn as the test's own)", got, "got hello\n"+want)
	}
}

// TestCommandKeepsIgnoredSignals: elect started with SIGHUP ignored (as
// nohup starts it) leaves it ignored in the command it runs: neither elect's
// nor its watchdog's signal handling may reset it, or a hangup forwarded by
// elect would kill the command nohup was to protect.
func TestCommandKeepsIgnoredSignals(t *testing.T) {
	args := []string{"-c", `trap "" HUP; exec "$0" "$@"`, electBin, "run", "--once", "--wait=2s", "--hold=2s",
		"--backend=" + backendURL(t, "redis", nil), "--election=" + election(t), "--", "grep", "SigIgn", "/proc/self/status"}
	out, err := exec.Command("sh", args...).Output()
	if err != nil {
		t.Fatalf("elect: %v", err)
	}
	hex, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "SigIgn:")
	if !ok {
		t.Fatalf("the command's stdout: %q, want its SigIgn line", out)
	}
	mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if hup := uint64(1) << (syscall.SIGHUP - 1); mask&hup == 0 {
		t.Errorf("the command's ignored signals %#x lack SIGHUP (%#x), which elect was started with ignored", mask, hup)
	}
}
