package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSignalTreeSignalsEachProcessOnce: the watchdog's signalTree reaches
// each process of a real tree exactly once: the members of the command's
// process group, grandchildren included, through one kill of the group
// and never again by PID; the processes outside the group (one in a
// session of its own, one in a group of its own) by PID, once each. The
// kills are recorded rather than sent, with this test process as the
// watchdog, so that the outcome does not depend on when the processes
// take their signals.
func TestSignalTreeSignalsEachProcessOnce(t *testing.T) {
	// The processes write their roles into a FIFO, which the test reads
	// as they are written.
	pidFile, lines := lineFIFO(t)
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
	timeout := time.After(20 * time.Second)
	for len(role) < 6 {
		select {
		case l := <-lines:
			if r, pid, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
				n, _ := strconv.Atoi(pid)
				role[n] = r
			}
		case <-timeout:
			t.Fatalf("the tree did not start within 20s: %v", role)
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
