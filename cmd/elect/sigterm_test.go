//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaderkit/elector/cmd/elect/internal/testcmd"
)

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
	p := startBin(t, electBin, []string{marker, testcmd.TermsDirEnv + "=" + dir, testcmd.TermsReadyEnv + "=" + readyPath, "GORACE=atexit_sleep_ms=0"},
		"run", "--grace=30s", "--backend="+backendURL(t, "redis", nil), "--election="+election(t), "--", cmdBin)
	t.Cleanup(func() {
		for _, pid := range marked(marker, p.cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	nextLines(t, ready, testcmd.TermsMembers+2, 30*time.Second, "the command's processes ready for SIGTERM")
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
