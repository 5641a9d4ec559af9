//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// watchdogArg, as elect's first argument, makes the process the watchdog
// of one run of the command instead of elect (see startChild). It is not
// a subcommand users type.
const watchdogArg = "__elect_watchdog"

// The watchdog's end of its two pipes to elect.
const (
	ctlFD    = 3 // elect → watchdog: "start" (the command), then "signal N" (to the group), "tree N" (to every process of the tree)
	statusFD = 4 // watchdog → elect: "ready", then "pid N" or "error MSG", then "exit WAITSTATUS"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == watchdogArg {
		os.Exit(watchdog(os.Args[2:]))
	}
}

// watch is the watchdog's view of the command's tree.
type watch struct {
	pgid    int                                     // the command's PID and process group ID
	root    int                                     // the watchdog's PID: the tree is its descendants
	kill    func(pid int, sig syscall.Signal) error // syscall.Kill
	exited  chan syscall.WaitStatus                 // the command's status, once reaped
	reaped  chan struct{}                           // another child was reaped (buffered, coalescing)
	noChild chan struct{}                           // closed when the watchdog has no child left
}

// watchdog runs argv, the command, as its child and stays between elect and
// the command's tree until the tree is gone. It is a child subreaper where
// the system has them, so that every process of the tree that loses its
// parent, even one that left the command's process group or session,
// becomes its child rather than init's. It passes elect's requests on to
// the tree; when the command exits, it kills what is left of the tree and
// then reports the command's status; when elect dies, which it learns from
// the end of its control pipe, it kills the whole tree at once. It returns
// the watchdog's exit code.
func watchdog(argv []string) int {
	syscall.CloseOnExec(ctlFD)
	syscall.CloseOnExec(statusFD)
	ctl, status := os.NewFile(ctlFD, "elect-control"), os.NewFile(statusFD, "elect-status")
	report := func(format string, args ...any) { fmt.Fprintf(status, format+"\n", args...) }
	if len(argv) == 0 {
		report("error watchdog: no command")
		return exitInternal
	}
	// Stopping is elect's business: a signal meant for elect or its
	// process group must not kill the watchdog and orphan the tree. The
	// signals are caught rather than ignored: an ignored signal would stay
	// ignored in the command. One elect started with ignored stays so.
	sigs := make(chan os.Signal, 1)
	notifyUnlessIgnored(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range sigs {
		}
	}()
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "elect: watchdog: %v; processes that leave the command's process group may outlive elect\n", err)
	}
	// Start the command only when elect, told that the watchdog runs,
	// says the term still lasts: the start of a watchdog can take long.
	report("ready")
	sc := bufio.NewScanner(ctl)
	if !sc.Scan() || sc.Text() != "start" {
		return exitOK // the term ended, or elect died
	}
	// The command's Pdeathsig (Linux) fires when the thread that started
	// it ends: keep this goroutine on its thread for good.
	runtime.LockOSThread()
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   commandSysProcAttr(),
	})
	if err != nil {
		report("error %s", strings.ReplaceAll(fmt.Sprintf("fork/exec %s: %v", argv[0], err), "\n", " "))
		return exitCannotRun
	}
	report("pid %d", pid)
	// Hold none of elect's input and output, which are the command's now:
	// whoever reads elect's output sees its end when elect and the tree
	// are done, not when the watchdog is.
	detachStdio()
	w := &watch{pgid: pid, root: os.Getpid(), kill: syscall.Kill, exited: make(chan syscall.WaitStatus, 1), reaped: make(chan struct{}, 1), noChild: make(chan struct{})}
	go w.reap()
	go func() {
		for sc.Scan() {
			w.serve(sc.Text())
		}
		// elect has died: it closes its end only after the watchdog has
		// exited. Kill from this goroutine, woken by the end of the pipe,
		// without waiting for another.
		w.killAll()
		os.Exit(exitOK)
	}()
	ws := <-w.exited
	w.killAll()
	report("exit %d", uint32(ws))
	return exitOK
}

// serve carries out one request from elect.
func (w *watch) serve(req string) {
	kind, arg, _ := strings.Cut(req, " ")
	n, err := strconv.Atoi(arg)
	if err != nil || n <= 0 {
		return
	}
	switch sig := syscall.Signal(n); kind {
	case "signal":
		_ = w.kill(-w.pgid, sig)
	case "tree":
		w.signalTree(sig)
	}
}

// signalTree sends sig once to each process of the command's tree: to the
// command's process group with one kill(2), which reaches every member
// together (a member forking at that moment has its fork restarted after
// the signal), then to each descendant of the watchdog outside that group.
// A member must not get sig a second time: a standard signal that arrives
// after the first was delivered counts twice, and many programs take a
// second SIGTERM as "stop now, skip the cleanup". A process that moves
// into or out of the group between the two steps may get sig twice or
// not at all; the SIGKILL at the end of the grace reaches it either way.
// Errors are ignored: ESRCH means the process has just exited, EPERM that
// it changed its credentials, and nothing more can be done for it either
// way.
func (w *watch) signalTree(sig syscall.Signal) {
	_ = w.kill(-w.pgid, sig)
	for _, pid := range descendants(w.root) {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid != w.pgid {
			_ = w.kill(pid, sig)
		}
	}
}

// killTree sends SIGKILL to the command's process group and to every
// descendant of the watchdog, whatever its group: a second SIGKILL does no
// harm, and a process that joined the group just after the group's was
// sent is not missed.
func (w *watch) killTree() {
	_ = w.kill(-w.pgid, syscall.SIGKILL)
	for _, pid := range descendants(w.root) {
		_ = w.kill(pid, syscall.SIGKILL)
	}
}

// killAll kills the tree with SIGKILL and returns once the watchdog has no
// child left. A process forked just before its parent was killed escapes
// one round; as a subreaper the watchdog inherits it when that parent
// dies, and each child reaped starts another round.
func (w *watch) killAll() {
	for {
		w.killTree()
		select {
		case <-w.noChild:
			return
		case <-w.reaped:
		case <-w.exited:
		}
	}
}

// reap waits for every child of the watchdog (the command, and the orphans
// of its tree) until none is left.
func (w *watch) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil: // ECHILD
			close(w.noChild)
			return
		case pid == w.pgid:
			w.exited <- ws
		default:
			select {
			case w.reaped <- struct{}{}:
			default:
			}
		}
	}
}
