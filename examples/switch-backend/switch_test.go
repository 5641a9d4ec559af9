package main

import (
	"testing"

	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/backendurl"
)

// TestSwitchBackend runs the program on mem://, the scheme it registers.
func TestSwitchBackend(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	backendurl.Register("mem", mem.Opener())
	if err := run("mem://"); err != nil {
		t.Fatal(err)
	}
	if err := run("consul://x"); err == nil {
		t.Error(`run("consul://x"): got nil, want an unknown-scheme error`)
	}
}
