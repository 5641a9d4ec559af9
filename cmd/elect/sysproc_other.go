//go:build unix && !linux

package main

import (
	"os"
	"syscall"
)

// commandSysProcAttr puts the command in a process group of its own.
// Outside Linux nothing kills the command if the watchdog itself dies.
func commandSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// selfExe is the path of this binary.
func selfExe() (string, error) { return os.Executable() }

// becomeSubreaper does nothing: elect uses no child subreaper on this
// system (FreeBSD's procctl(PROC_REAP_ACQUIRE) would do, but is not wired
// in). The watchdog then reaches only the command's process group: a
// process of the tree that moved to another group or session (setsid, a
// daemon's double fork) outlives elect, as the package doc says.
func becomeSubreaper() error { return nil }

// descendants finds nothing: without /proc, the watchdog signals only the
// command's process group.
func descendants(int) []int { return nil }

// detachStdio points standard input, output and error at /dev/null.
func detachStdio() {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDWR, 0)
	if err != nil {
		return
	}
	for std := range 3 {
		_ = syscall.Dup2(fd, std)
	}
	if fd > 2 {
		syscall.Close(fd)
	}
}
