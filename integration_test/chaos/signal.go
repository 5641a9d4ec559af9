package chaos

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// signalTakesEffect bounds how long signalled waits for a signal to act.
const signalTakesEffect = time.Second

// signalled waits until SIGSTOP has stopped process pid, or SIGKILL has
// killed it (a zombie, or reaped), as /proc/<pid>/stat shows, for at most
// signalTakesEffect; other signals return at once. A signal is delivered
// asynchronously: a candidate goes on running for a moment after kill(2)
// returns, and an event it stamps meanwhile is later than a pause or kill
// stamped before the signal was sent. The checker then saw a term begin
// after the pause that froze it (an overlap that was none: etcd-partitions
// seed 5202, "elected" 0.3 ms after "pause"). Stamped after this returns,
// a pause or kill follows every event the process made before it stopped.
func signalled(pid int, sig syscall.Signal) error {
	var want string
	switch sig {
	case syscall.SIGSTOP:
		want = "tT"
	case syscall.SIGKILL:
		want = "ZX"
	default:
		return nil
	}
	deadline := time.Now().Add(signalTakesEffect)
	for {
		state, err := procState(pid)
		switch {
		case err != nil && os.IsNotExist(err) && sig == syscall.SIGKILL:
			return nil // dead and reaped
		case err != nil:
			return err
		case strings.IndexByte(want, state) >= 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("process %d in state %c %v after %v", pid, state, signalTakesEffect, sig)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// procState returns the state letter of process pid (R, S, D, T, t, Z, X…).
func procState(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// pid (comm) state …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("/proc/%d/stat: no state in %q", pid, b)
	}
	return b[i+2], nil
}
