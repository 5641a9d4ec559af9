package chaos

import (
	"bufio"
	"os"
	"strconv"
	"testing"

	"github.com/leaderkit/elector/integration_test/internal/toxileak"
	"go.uber.org/goleak"
)

// The checker, clock, priority and probe tests call t.Parallel: they work on
// synthetic histories and touch no server. TestChaos stays serial (every
// campaign kills, pauses or restarts the test servers), and so does
// TestSignalStampsAfterEffect, which stops and kills copies of the test
// binary; both run before the parallel tests.
func TestMain(m *testing.M) {
	if os.Getenv(monoLoopEnv) != "" {
		monoLoop()
	}
	goleak.VerifyTestMain(m, toxileak.Ignore...)
}

// monoLoopEnv makes the test binary a child that writes its CLOCK_MONOTONIC
// readings to stdout, one per line, until it is killed (see
// TestSignalStampsAfterEffect).
const monoLoopEnv = "ELECTOR_CHAOS_MONO_LOOP"

func monoLoop() {
	w := bufio.NewWriterSize(os.Stdout, 64)
	for {
		_, _ = w.WriteString(strconv.FormatInt(Mono(), 10) + "\n")
		_ = w.Flush()
	}
}
