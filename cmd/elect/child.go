//go:build unix

package main

import (
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// child is one run of the command, in a process group of its own.
type child struct {
	pid   int           // also the process group ID
	done  chan struct{} // closed once the process has exited and been reaped
	state *os.ProcessState
}

// startChild starts argv with env. The goroutine that starts the process
// stays on its OS thread until the process exits: on Linux the process is
// killed when that thread ends (Pdeathsig), that is, when elect dies.
func startChild(argv, env []string) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = sysProcAttr()
	c := &child{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		c.pid = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait() // the status is in ProcessState
		c.state = cmd.ProcessState
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// signal sends sig to the command's process group. Before the command has
// been reaped its PID, which is the group's ID, cannot be reused; after,
// the group ID stays reserved while any member lives.
func (c *child) signal(sig syscall.Signal) {
	// ESRCH: the group is gone. EPERM: a member changed its credentials;
	// nothing more can be done for it.
	_ = syscall.Kill(-c.pid, sig)
}

// stop sends SIGTERM to the process group, SIGKILL after grace if the
// command has not exited, and returns once it has exited; then it kills
// what is left of its group.
func (c *child) stop(grace time.Duration, log *slog.Logger) {
	c.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		log.Warn("the command did not stop within the grace period; killing it", "grace", grace)
		c.signal(syscall.SIGKILL)
		<-c.done
	}
	c.killGroup()
}

// killGroup kills the processes the command left behind in its group, so
// that nothing it started runs on after its term.
func (c *child) killGroup() { c.signal(syscall.SIGKILL) }

// code is the command's exit status as a shell reports it: its exit code,
// or 128+N when signal N killed it.
func (c *child) code() int {
	if c.state == nil {
		return exitInternal
	}
	if ws, ok := c.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return c.state.ExitCode()
}
