//go:build unix && !linux

package main

import "syscall"

// sysProcAttr puts the command in a process group of its own. Outside
// Linux nothing kills it if elect itself is killed.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
