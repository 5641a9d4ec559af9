//go:build unix

package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestChildStartsOnlyWhileTheTermLasts: the watchdog starts the command
// only if the term still lasts once the watchdog runs; a term that ended
// while the watchdog started (seconds, on a loaded machine) starts none.
func TestChildStartsOnlyWhileTheTermLasts(t *testing.T) {
	for _, live := range []bool{false, true} {
		mark := filepath.Join(t.TempDir(), "ran")
		ch, err := startChild([]string{"/bin/sh", "-c", "touch " + mark}, os.Environ(), func() bool { return live })
		if !live {
			if !errors.Is(err, errTermOver) || ch != nil {
				t.Fatalf("term over: got (%v, %v), want errTermOver and no child", ch, err)
			}
			if _, err := os.Stat(mark); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("term over: the command ran (stat: %v); want it never started", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("term live: %v", err)
		}
		<-ch.done
		if code := ch.code(); code != 0 {
			t.Errorf("term live: the command exited %d, want 0", code)
		}
		if _, err := os.Stat(mark); err != nil {
			t.Errorf("term live: the command did not run: %v", err)
		}
	}
}
