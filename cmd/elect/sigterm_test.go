//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
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

// termsReadyEnv is the FIFO into which each SIGTERM-counting process
// writes a line once its handler is in place.
const termsReadyEnv = "ELECTTEST_TERMS_READY"

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
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d", role, os.Getpid())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "terms:", err)
		return 1
	}
	defer f.Close()
	// The handler is in place: say so. The test sends nothing before
	// every process has.
	if err := say(os.Getenv(termsReadyEnv), fmt.Sprintf("ready %s %d", role, os.Getpid())); err != nil {
		fmt.Fprintln(os.Stderr, "terms:", err)
		return 1
	}
	<-sigs
	fmt.Fprintln(f, "TERM")
	code := make(chan int, 1)
	go func() {
		// The clean stop's own duration: the window in which a second
		// SIGTERM is taken as "force quit".
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

// say writes line to the FIFO at path.
func say(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestStopSendsOneSIGTERMPerProcess: when elect stops, every process of
// COMMAND's tree gets exactly one SIGTERM, the members of COMMAND's
// process group and a process that left it alike, and a command that
// takes a second SIGTERM as "force quit" stops cleanly within --grace.
// Signalling the group and then every descendant would signal a member
// twice whenever it had taken the first SIGTERM in between, which depends
// on scheduling; with a dozen members, most stops would show it.
func TestStopSendsOneSIGTERMPerProcess(t *testing.T) {
	dir := t.TempDir()
	readyPath, ready := lineFIFO(t)
	marker := fmt.Sprintf("ELECTTEST_TREE=%s-%d", t.Name(), time.Now().UnixNano())
	p := startBin(t, electBin, []string{marker, termsDirEnv + "=" + dir, termsReadyEnv + "=" + readyPath, "GORACE=atexit_sleep_ms=0"},
		"run", "--grace=30s", "--backend="+backendURL(t, "redis", nil), "--election="+election(t), "--", testBin(t))
	t.Cleanup(func() {
		for _, pid := range marked(marker, p.cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	nextLines(t, ready, termsMembers+2, 30*time.Second, "the command's processes ready for SIGTERM")
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
