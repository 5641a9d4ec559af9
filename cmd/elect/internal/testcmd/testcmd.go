//go:build unix

// Package testcmd is the command elect's tests have elect run: a small
// program of its own, built without the race detector, so that the
// commands the tests start (about eighty a run) cost a fraction of what a
// race-built test binary costs to start. What it does depends on its
// environment: [ChildAddrEnv] makes it a hub child, [TermsDirEnv] a
// SIGTERM-counting command.
package testcmd

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ChildAddrEnv, when set, makes the command a hub child: it dials the
// address, says hello (with ELECT_TERM_IDENTITY, ELECT_TERM_TOKEN, its PID
// and ELECT_TERM_START), reports SIGHUP and SIGUSR1, and holds the
// connection open until it is killed or told "exit N", so that the test
// sees exactly when it dies.
const ChildAddrEnv = "ELECTTEST_CHILD_ADDR"

// IgnoreTermEnv, when set, makes a hub child ignore SIGTERM, so that only
// SIGKILL stops it.
const IgnoreTermEnv = "ELECTTEST_IGNORE_TERM"

// TermsDirEnv, when set, makes the command count its SIGTERMs: each
// process writes one line "TERM" per SIGTERM to a file of its own in that
// directory. The first SIGTERM starts a clean stop that takes
// [TermsLinger]; a second one during it is taken as "force quit", as elect
// and many servers do: the process exits 3 at once.
const TermsDirEnv = "ELECTTEST_TERMS_DIR"

// TermsReadyEnv is the FIFO into which each SIGTERM-counting process
// writes a line ("ready ROLE PID") once its handler is in place.
const TermsReadyEnv = "ELECTTEST_TERMS_READY"

// TermsRoleEnv is the role of a SIGTERM-counting process: empty for the
// command itself, which starts [TermsMembers] processes in its process
// group and one in a session of its own, then "member" or "outsider".
const TermsRoleEnv = "ELECTTEST_TERMS_ROLE"

// TermsMembers is how many members a SIGTERM-counting command starts, and
// TermsLinger how long its clean stop takes.
const (
	TermsMembers = 12
	TermsLinger  = 300 * time.Millisecond
)

// Main runs the command its environment asks for and exits with its
// status; 2 when the environment asks for none.
func Main() {
	switch {
	case os.Getenv(ChildAddrEnv) != "":
		os.Exit(child(os.Getenv(ChildAddrEnv)))
	case os.Getenv(TermsDirEnv) != "":
		os.Exit(terms(os.Getenv(TermsDirEnv)))
	}
	fmt.Fprintf(os.Stderr, "testcmd: set %s or %s\n", ChildAddrEnv, TermsDirEnv)
	os.Exit(2)
}

// child is the hub child (ChildAddrEnv); it returns its exit code.
func child(addr string) int {
	if os.Getenv(IgnoreTermEnv) != "" {
		signal.Ignore(syscall.SIGTERM)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(c, format+"\n", args...)
	}
	say("hello %s %s %d %s", os.Getenv("ELECT_TERM_IDENTITY"), os.Getenv("ELECT_TERM_TOKEN"), os.Getpid(), os.Getenv("ELECT_TERM_START"))
	go func() {
		for s := range sigs {
			say("signal %s", s)
		}
	}()
	// Obey "exit N" lines until the test closes the connection.
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if code, ok := strings.CutPrefix(sc.Text(), "exit "); ok {
			n, _ := strconv.Atoi(code)
			return n
		}
	}
	return 0
}

// terms is the SIGTERM-counting command (TermsDirEnv); it returns its exit
// code: 0 after a clean stop (for the command, only if every process it
// started stopped cleanly too), 3 after a second SIGTERM.
func terms(dir string) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM)
	role := os.Getenv(TermsRoleEnv)
	var kids []*exec.Cmd
	if role == "" {
		role = "command"
		for i := range TermsMembers + 1 {
			kid := exec.Command(os.Args[0])
			kid.Env = append(os.Environ(), TermsRoleEnv+"=member")
			if i == TermsMembers {
				kid.Env = append(os.Environ(), TermsRoleEnv+"=outsider")
				kid.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			}
			if err := kid.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "terms:", err)
				return 1
			}
			kids = append(kids, kid)
		}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d", role, os.Getpid())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "terms:", err)
		return 1
	}
	defer f.Close()
	// The handler is in place: say so. The test sends nothing before
	// every process has.
	if err := sayTo(os.Getenv(TermsReadyEnv), fmt.Sprintf("ready %s %d", role, os.Getpid())); err != nil {
		fmt.Fprintln(os.Stderr, "terms:", err)
		return 1
	}
	<-sigs
	fmt.Fprintln(f, "TERM")
	code := make(chan int, 1)
	go func() {
		// The clean stop's own duration: the window in which a second
		// SIGTERM is taken as "force quit".
		time.Sleep(TermsLinger)
		c := 0
		for _, kid := range kids {
			if kid.Wait() != nil {
				c = 1
			}
		}
		code <- c
	}()
	select {
	case c := <-code:
		return c
	case <-sigs:
		fmt.Fprintln(f, "TERM")
		return 3
	}
}

// sayTo writes line to the FIFO at path.
func sayTo(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
