//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// commandSysProcAttr puts the command in a process group of its own, and
// has the kernel kill it when the watchdog dies.
func commandSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// selfExe is the path that runs this very binary again, even if its file
// has been replaced or removed since elect started.
func selfExe() (string, error) { return "/proc/self/exe", nil }

// becomeSubreaper makes the calling process the child subreaper of its
// descendants (prctl(2), Linux 3.4): an orphan among them becomes its child
// instead of init's.
func becomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno)
	}
	return nil
}

// descendants returns the PIDs of the processes below root; a process
// forked after the call may be missing. It reads the kernel's lists of
// each thread's children (/proc/PID/task/TID/children), which visit only
// the tree, or, on a kernel built without them, the parent of every
// process in /proc/*/stat.
func descendants(root int) []int {
	var out []int
	next := []int{root}
	for len(next) > 0 {
		pid := next[0]
		kids, ok := children(pid)
		if !ok {
			return scanDescendants(root)
		}
		next = append(next[1:], kids...)
		out = append(out, kids...)
	}
	return out
}

// children returns the children of pid from the lists of its threads, and
// false when the kernel keeps no such lists (CONFIG_PROC_CHILDREN unset).
// A process that has just exited has no children.
func children(pid int) ([]int, bool) {
	task := "/proc/" + strconv.Itoa(pid) + "/task/"
	d, err := os.Open(task)
	if err != nil {
		return nil, true // gone
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile(task + tid + "/children")
		if errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(task + tid); err == nil {
				return nil, false // the thread is there, its list is not
			}
		}
		for _, f := range strings.Fields(string(b)) {
			if kid, err := strconv.Atoi(f); err == nil {
				out = append(out, kid)
			}
		}
	}
	return out, true
}

// scanDescendants is descendants from the parent PID of every process.
func scanDescendants(root int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	kids := make(map[int][]int)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone since
		}
		if ppid, ok := parentPID(stat); ok {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	var out []int
	for next := kids[root]; len(next) > 0; {
		pid := next[0]
		next = append(next[1:], kids[pid]...)
		out = append(out, pid)
	}
	return out
}

// parentPID reads the parent PID from the contents of /proc/PID/stat:
// "PID (COMM) STATE PPID ...", where COMM may hold spaces and parentheses.
func parentPID(stat []byte) (int, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}

// detachStdio points standard input, output and error at /dev/null.
func detachStdio() {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDWR, 0)
	if err != nil {
		return
	}
	for std := range 3 {
		_ = syscall.Dup3(fd, std, 0)
	}
	if fd > 2 {
		syscall.Close(fd)
	}
}
