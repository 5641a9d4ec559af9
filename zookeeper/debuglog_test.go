package zookeeper

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/internal/testenv"
)

// TestDebugLogsWait: with a Logger at level Debug, a candidate queued
// behind another logs whom it waits for — the predecessor's znode, identity
// and session — so that a partition nobody takes can be traced to the
// znode that blocks it.
func TestDebugLogsWait(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var out testenv.Buffer
	a, _ := f.backend(nil)
	b, _ := f.backend(&Options{Prefix: testPrefix, Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	election := "debuglog-" + randomSuffix()
	l := f.acquire(a, election, "alice")
	ch := f.campaignAsync(b, election, "bob")
	want := []string{
		"msg=\"zookeeper: candidate waits\"",
		"election=" + election,
		"predecessor_identity=alice",
		fmt.Sprintf("predecessor_session=%#x", f.owner(l)),
		"place=1",
	}
	deadline := time.After(10 * time.Second)
	for text, written := out.Next(); !strings.Contains(text, "candidate waits"); text, written = out.Next() {
		select {
		case <-written:
		case <-deadline:
			t.Fatalf("bob logs no wait within 10s:\n%s", text)
		}
	}
	line := out.String()
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("debug log %q lacks %q", line, w)
		}
	}
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	r := f.await(ch, 10*time.Second, "bob leads once alice releases")
	if err := r.l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}

	// At level Info nothing is logged for a wait.
	var quiet testenv.Buffer
	c, _ := f.backend(&Options{Prefix: testPrefix, Logger: slog.New(slog.NewTextHandler(&quiet, nil))})
	l = f.acquire(a, election, "alice")
	ch = f.campaignAsync(c, election, "carol")
	f.awaitCandidates(election, 2, 10*time.Second, "carol queues")
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	r = f.await(ch, 10*time.Second, "carol leads once alice releases")
	if err := r.l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	if s := quiet.String(); strings.Contains(s, "candidate waits") {
		t.Errorf("logged at level Info: %q; want no wait logged", s)
	}
}
