//go:build unix

package main

import "syscall"

// sysProcAttr puts the command in a process group of its own, and has the
// kernel kill it when elect dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
