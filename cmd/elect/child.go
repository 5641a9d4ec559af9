//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is one run of the command, in a process group of its own, under a
// watchdog: a copy of elect (see watchdog) that is the command's parent,
// passes elect's signals on to it, and kills the command's whole tree when
// the command exits or elect dies.
type child struct {
	pid      int           // the command's PID, also its process group ID
	done     chan struct{} // closed once the command has exited and the rest of its tree is gone
	ctl      *os.File      // requests to the watchdog
	status   syscall.WaitStatus
	reported bool // the watchdog reported status
}

// errTermOver: the term ended while the watchdog started, and the command
// was not started.
var errTermOver = errors.New("the term ended before the command could start")

// startChild starts argv with env under a watchdog, and returns once the
// command runs, or with the error that kept it from starting. The watchdog,
// once it runs, starts the command only if live still reports true then:
// a watchdog can take seconds to start on a loaded machine, and the term
// may end meanwhile. It returns errTermOver when live reported false.
func startChild(argv, env []string, live func() bool) (*child, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, fmt.Errorf("cannot find elect's own binary for the watchdog: %w", err)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	wd := &exec.Cmd{Path: exe, Args: append([]string{"elect", watchdogArg}, argv...), Env: env}
	wd.Stdin, wd.Stdout, wd.Stderr = os.Stdin, os.Stdout, os.Stderr
	wd.ExtraFiles = []*os.File{ctlR, statusW} // ctlFD and statusFD in the watchdog
	// A group of its own: a signal to elect's group (a shell's kill -9 %1)
	// must leave the watchdog alive to clean up after elect.
	wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = wd.Start()
	ctlR.Close()
	statusW.Close()
	if err != nil {
		ctlW.Close()
		statusR.Close()
		return nil, fmt.Errorf("cannot start the watchdog: %w", err)
	}
	c := &child{done: make(chan struct{}), ctl: ctlW}
	lines := bufio.NewScanner(statusR)
	next := func() string {
		if lines.Scan() {
			return lines.Text()
		}
		return ""
	}
	// abandon ends the watchdog (it exits when its control pipe closes,
	// killing the command if it started one) and returns err.
	abandon := func(err error) (*child, error) {
		ctlW.Close()
		statusR.Close()
		_ = wd.Wait()
		return nil, err
	}
	first := next()
	if first == "ready" {
		if !live() {
			return abandon(errTermOver) // the watchdog exits without starting the command
		}
		if _, err := fmt.Fprintln(ctlW, "start"); err != nil {
			return abandon(fmt.Errorf("cannot tell the watchdog to start the command: %w", err))
		}
		first = next()
	}
	if pid, ok := strings.CutPrefix(first, "pid "); ok {
		c.pid, err = strconv.Atoi(pid)
	} else if msg, ok := strings.CutPrefix(first, "error "); ok {
		err = errors.New(msg)
	} else {
		err = fmt.Errorf("the watchdog said %q; want the command's PID", first)
	}
	if err != nil {
		return abandon(err)
	}
	go c.wait(wd, lines, statusR)
	return c, nil
}

// wait reads the command's status from the watchdog, and reaps the
// watchdog. Done closes as soon as the status is in: the watchdog reports
// it once the tree is gone, and exits right after.
func (c *child) wait(wd *exec.Cmd, lines *bufio.Scanner, statusR *os.File) {
	for lines.Scan() {
		if ws, ok := strings.CutPrefix(lines.Text(), "exit "); ok {
			n, err := strconv.ParseUint(ws, 10, 32)
			c.status, c.reported = syscall.WaitStatus(n), err == nil
			break
		}
	}
	if c.reported {
		close(c.done)
	}
	statusR.Close()
	_ = wd.Wait()
	c.ctl.Close()
	if !c.reported { // the watchdog died without a report
		close(c.done)
	}
}

// signal sends sig to the command's process group.
func (c *child) signal(sig syscall.Signal) { c.request("signal", sig) }

// signalTree sends sig to the command's process group and to every other
// process of its tree, even those that left the group.
func (c *child) signalTree(sig syscall.Signal) { c.request("tree", sig) }

// request asks the watchdog to send sig. After the watchdog has exited
// there is nothing left to signal, and the write fails harmlessly.
func (c *child) request(kind string, sig syscall.Signal) {
	_, _ = fmt.Fprintf(c.ctl, "%s %d\n", kind, int(sig))
}

// stop sends SIGTERM to the command's tree, SIGKILL after grace if the
// command has not exited, and returns once the command has exited and what
// was left of its tree has been killed.
func (c *child) stop(grace time.Duration, log *slog.Logger) {
	c.signalTree(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		log.Warn("the command did not stop within the grace period; killing it", "grace", grace)
		c.signalTree(syscall.SIGKILL)
		<-c.done
	}
	c.killGroup()
}

// killGroup kills the processes the command left behind, so that nothing
// it started runs on after its term. Once done is closed the watchdog has
// done so already, unless the watchdog itself was killed: then the
// command's process group is all that can still be reached.
func (c *child) killGroup() {
	if !c.reported {
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	}
}

// code is the command's exit status as a shell reports it: its exit code,
// or 128+N when signal N killed it.
func (c *child) code() int {
	switch {
	case !c.reported:
		return exitInternal
	case c.status.Signaled():
		return 128 + int(c.status.Signal())
	}
	return c.status.ExitStatus()
}
