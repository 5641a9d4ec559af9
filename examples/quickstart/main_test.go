package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickstart builds and runs the README's first command as a newcomer
// would and checks what it shows: an election, a graceful hand-over, a
// crash failover after about a TTL, increasing tokens, a clean exit.
func TestQuickstart(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(t.Context(), bin).CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart: got %v, want exit 0; output:\n%s", err, out)
	}
	for _, want := range []string{
		`(?m)^store: embedded etcd at 127\.0\.0\.1:\d+`,
		`(?m)^graceful failover: [\d.]+(µs|ms) from stopping \w+ to \w+'s election$`,
		`(?m)^crash failover: [\d.]+s from the crash to \w+'s election \(TTL 2s\); token \d+ > \d+$`,
		`(?m)^done$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("output: got no line matching %s; output:\n%s", want, out)
		}
	}
	var last uint64
	for _, m := range regexp.MustCompile(`(?m)^\s+[\d.]+s\s+\w+\s+elected\s+token (\d+)$`).FindAllSubmatch(out, -1) {
		tok, _ := strconv.ParseUint(string(m[1]), 10, 64)
		if tok <= last {
			t.Errorf("elected token %d after %d, want strictly increasing tokens; output:\n%s", tok, last, out)
		}
		last = tok
	}
	if last == 0 {
		t.Errorf("output: got no elections; output:\n%s", out)
	}
}
