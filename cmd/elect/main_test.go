//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/leaderkit/elector/internal/testenv"
)

// parallelTests is how many parallel tests run at once unless -parallel
// is given.
const parallelTests = 4

// mustBuild runs go build of args (flags, then the package) into out, or
// exits; it returns out.
func mustBuild(out string, args ...string) string {
	build := exec.Command("go", append([]string{"build", "-ldflags=-s -w", "-o", out}, args...)...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s: %v\n", filepath.Base(out), err)
		os.Exit(1)
	}
	return out
}

// electBin is the elect binary the tests run as a real process, and cmdBin
// the command they have it run (internal/testcmd).
var electBin, cmdBin string

// backgroundBuilds are further builds of elect that some tests need. TestMain
// starts each in a goroutine of its own once electBin is built, so that they
// compile while the first tests wait on their timers, and waits for them
// before it looks for leaked goroutines.
var backgroundBuilds []func()

func TestMain(m *testing.M) {
	// A test run started with SIGHUP ignored (under nohup) would start every
	// elect with it ignored too, and elect, by design, neither catches nor
	// forwards a signal it was started with ignored: the tests of signal
	// forwarding would fail. Caught here, it reaches elect at its default.
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
	// A race-built binary sleeps a second before it exits (the race
	// runtime's atexit_sleep_ms), and the tests start race-built elects
	// and watchdogs by the hundred: without the sleep, which only
	// gives goroutines still running at exit a last chance to race, they
	// wait minutes less. Races while they run are reported as ever.
	if err := os.Setenv("GORACE", strings.TrimSpace("atexit_sleep_ms=0 "+os.Getenv("GORACE"))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Most tests here spend their time waiting on elect processes and the
	// servers' timers, not on a CPU; each starts race-built processes,
	// though, which take a CPU while they start.
	testenv.DefaultParallel(parallelTests)
	dir, err := os.MkdirTemp("", "elect-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Both linked without the symbol table and DWARF, as scripts/test.sh
	// links the test binaries: race reports and panics keep every
	// file:line.
	electBin = mustBuild(filepath.Join(dir, "elect"), "-race", ".")
	// The command elect runs in the tests, about eighty times a run: a
	// small program of standard library code, built without the race
	// detector, which starts in about 10 ms of CPU where the race-built
	// test binary took a quarter of a second. It is the tests' instrument,
	// not code under test.
	cmdBin = mustBuild(filepath.Join(dir, "testcmd"), "./internal/testcmd/cmd")
	var builds sync.WaitGroup
	for _, b := range backgroundBuilds {
		builds.Go(b)
	}
	code := 0
	func() {
		// Deferred calls run last first: the builds end, then goleak looks,
		// then the directory goes.
		defer os.RemoveAll(dir)
		defer func() {
			if err := goleak.Find(); err != nil && code == 0 {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				code = 1
			}
		}()
		defer builds.Wait()
		// elect sets the libraries' loggers on its first call, and klog's
		// setter races with a client already logging: some tests run
		// clients of their own beside elect, so the setter runs first.
		setLibraryLoggers()
		code = m.Run()
	}()
	os.Exit(code)
}
