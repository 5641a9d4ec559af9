package chaos

import "testing"

// TestClockMode: the clock mode is Redlock's only, and of the violations
// that follow a clock jump only the overlap and the writes the fence could
// not yet refuse stay documented.
func TestClockMode(t *testing.T) {
	t.Parallel()
	if base, mode := SplitCampaign("redlock-noaof-clock"); base != "redlock-noaof" || mode != "clock" {
		t.Errorf("SplitCampaign: got %q %q", base, mode)
	}
	if _, err := ModeFaults("clock", "etcd", false); err == nil {
		t.Error("ModeFaults(clock, etcd): want an error")
	}
	kinds, err := ModeFaults("clock", "redis", false)
	if err != nil || len(kinds) != 4 {
		t.Fatalf("ModeFaults(clock, redis): %v, %v", kinds, err)
	}
	if DocumentedClock(FaultClockSlew) || !DocumentedClock(FaultClockJump) {
		t.Error("DocumentedClock: a slew within the drift factor is no excuse; a jump is")
	}
	r := Result{Violations: []Violation{
		{Kind: ViolationOverlap, Documented: true},
		{Kind: ViolationStaleWrite, Detail: "fence accepted a's token 3 at 1s, after another process's later term began at 0.9s", Documented: true},
		{Kind: ViolationStaleWrite, Detail: "fence accepted a's token 3 after accepting 4", Documented: true},
		{Kind: ViolationTokenOrder, Documented: true},
	}}
	FailStaleWrites(&r)
	for i, want := range []bool{true, true, false, false} {
		if got := r.Violations[i].Documented; got != want {
			t.Errorf("violation %d (%s %q): documented %v, want %v", i, r.Violations[i].Kind, r.Violations[i].Detail, got, want)
		}
	}
}
