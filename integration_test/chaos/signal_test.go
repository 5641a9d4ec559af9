package chaos

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// TestSignalStampsAfterEffect: the pause event the nemesis records is later
// than everything the paused process did before it stopped. A child writes
// its monotonic clock continuously; after the pause is recorded it is
// killed, and no reading it wrote may be later than the pause. Before, the
// pause was stamped before SIGSTOP was sent, the child ran on for a moment,
// and a candidate's "elected" stamped in that moment opened a term after
// the pause that froze it: a false overlap (etcd-partitions, seed 5202).
// Not t.Parallel: it stops and kills copies of the test binary.
func TestSignalStampsAfterEffect(t *testing.T) {
	for run := range 20 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), monoLoopEnv+"=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		if !lines.Scan() { // running: it has written once
			t.Fatalf("child wrote nothing: %v", lines.Err())
		}
		c := &campaign{cfg: Config{Name: "signal", Logf: t.Logf}, hist: &History{}, leading: map[leadKey]int64{}, running: map[int]*proc{}}
		p := &proc{name: "child", cmd: cmd, done: make(chan struct{})}
		c.signal(p, syscall.SIGSTOP, KindPause)
		if state, err := procState(cmd.Process.Pid); err != nil || (state != 'T' && state != 't') {
			t.Fatalf("child state after the pause: %c, %v; want stopped (T)", state, err)
		}
		c.signal(p, syscall.SIGKILL, KindKill)
		evs := c.hist.Events()
		if len(evs) != 2 || evs[0].Kind != KindPause || evs[1].Kind != KindKill {
			t.Fatalf("history: %+v; want a pause then a kill", evs)
		}
		paused, late := evs[0].Mono, 0
		for lines.Scan() {
			if m, err := strconv.ParseInt(lines.Text(), 10, 64); err == nil && m > paused {
				late++
			}
		}
		_ = cmd.Wait()
		if late > 0 {
			t.Fatalf("run %d: the child wrote %d readings later than its pause: a pause must be stamped once the process has stopped", run, late)
		}
	}
}
