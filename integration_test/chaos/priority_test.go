package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var prioParams = PriorityParams{MinTerm: time.Second, Budget: 2 * time.Second, Liveness: 3 * time.Second}

func startPrio(t float64, proc string, prio int) Event {
	return Event{Mono: s(t), Proc: proc, Kind: KindStart, Note: "priority " + string(rune('0'+prio))}
}

// checkPrio runs Check and CheckPriority on h.
func checkPrio(h []Event) (Result, PriorityStats) {
	r := Check(h, params)
	st := CheckPriority(h, &r, prioParams)
	return r, st
}

const preempted = "elector: preempted by a candidate of a higher priority"

func TestCheckPriorityYield(t *testing.T) {
	t.Parallel()
	h := []Event{
		startPrio(0, "a", 1), elected(0.1, "a", 1),
		startPrio(2, "b", 2), stepdown(2.5, "a", 1), revoked(2.5, "a", 1, "", preempted),
		elected(2.6, "b", 2), stepdown(4, "b", 2), {Mono: s(4), Proc: "b", Kind: KindLeave},
		elected(4.1, "a", 3), stepdown(5, "a", 3),
	}
	r, st := checkPrio(h)
	if len(r.Violations) != 0 {
		t.Fatalf("got violations %v, want none", kinds(r))
	}
	if st.Yields != 1 || st.Needless != 0 || st.Lags != 1 || st.WorstLag < 480*time.Millisecond || st.WorstLag > 500*time.Millisecond {
		t.Errorf("stats %+v; want 1 yield, none needless, one lag of about 490ms", st)
	}
	// The top priority goes 1 → 2 at 2 s and back to 1 at 4 s.
	if st.Changes != 2 || st.PriorityChanges != 2 {
		t.Errorf("%d leadership changes, %d priority changes; want 2 and 2", st.Changes, st.PriorityChanges)
	}
}

func TestCheckPriorityLowerLeads(t *testing.T) {
	t.Parallel()
	h := []Event{
		startPrio(0, "a", 1), elected(0.1, "a", 1),
		startPrio(1, "b", 3), stepdown(6, "a", 1),
	}
	r, st := checkPrio(h)
	if got := kinds(r); !slices.Equal(got, []string{ViolationLowerLeads}) {
		t.Fatalf("got violations %v, want one %s", got, ViolationLowerLeads)
	}
	if v := r.Violations[0]; !strings.Contains(v.Detail, "b (priority 3) was live and reachable from 1.100s") {
		t.Errorf("violation: %s", FormatViolation(v))
	}
	if st.WorstLag < 4800*time.Millisecond {
		t.Errorf("worst lag %v; want about 4.9s (from the minimum term at 1.1s to 6s)", st.WorstLag)
	}
}

// A fault on the store, and a higher candidate that is paused or cut off,
// suspend the rule: the lag counts from the heal.
func TestCheckPrioritySuspended(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault []Event
	}{
		{"store", []Event{
			{Mono: s(1.5), Kind: KindFault, Proc: "redis 1,2,3", Note: FaultPauseMajor},
			{Mono: s(5.5), Kind: KindHeal, Note: FaultPauseMajor},
		}},
		{"paused higher", []Event{
			{Mono: s(1.5), Kind: KindFault, Proc: "b", Note: FaultPausePreferred}, {Mono: s(1.5), Proc: "b", Kind: KindPause},
			{Mono: s(5.5), Proc: "b", Kind: KindResume}, {Mono: s(5.5), Kind: KindHeal, Note: FaultPausePreferred},
		}},
		{"cut higher", []Event{
			{Mono: s(0.5), Kind: KindFault, Proc: "b", Note: FaultCutPreferred},
			{Mono: s(5.5), Kind: KindHeal, Note: FaultCutPreferred},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := append([]Event{
				startPrio(0, "a", 1), elected(0.1, "a", 1), startPrio(0.2, "b", 2),
				stepdown(6.5, "a", 1), revoked(6.5, "a", 1, "", preempted), elected(6.6, "b", 2),
			}, tc.fault...)
			r, st := checkPrio(h)
			if len(r.Violations) != 0 {
				t.Fatalf("got violations %v, want none", kinds(r))
			}
			if st.WorstLag < 980*time.Millisecond || st.WorstLag > time.Second {
				t.Errorf("worst lag %v; want about 1s, from the heal at 5.5s", st.WorstLag)
			}
		})
	}
}

func TestCheckPriorityNeedlessYield(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		h          []Event
	}{
		{"no higher", "no candidate of a higher priority", []Event{
			startPrio(0, "a", 2), startPrio(0, "c", 1), elected(0.1, "a", 1),
			stepdown(3, "a", 1), revoked(3, "a", 1, "", preempted), elected(3.1, "c", 2),
		}},
		// b left 4 s before the yield: its entry is gone by then.
		{"higher long gone", "no candidate of a higher priority", []Event{
			startPrio(0, "a", 2), startPrio(0, "b", 3), {Mono: s(1), Proc: "b", Kind: KindLeave},
			elected(1.1, "a", 1), stepdown(5, "a", 1), revoked(5, "a", 1, "", preempted),
		}},
		{"before its minimum term", "before its minimum term", []Event{
			startPrio(0, "a", 1), elected(0.1, "a", 1), startPrio(0.2, "b", 2),
			stepdown(0.5, "a", 1), revoked(0.5, "a", 1, "", preempted), elected(0.6, "b", 2),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, st := checkPrio(tc.h)
			if got := kinds(r); !slices.Equal(got, []string{ViolationNeedlessYield}) {
				t.Fatalf("got violations %v, want one %s", got, ViolationNeedlessYield)
			}
			if !strings.Contains(r.Violations[0].Detail, tc.want) || st.Yields != 1 || st.Needless != 1 {
				t.Errorf("violation %q, stats %+v; want it to say %q, 1 yield, 1 needless", r.Violations[0].Detail, st, tc.want)
			}
		})
	}
}

// A yield while the higher candidate's entry may still be live is not
// needless, even though its process has just gone.
func TestCheckPriorityYieldToRecentlyGone(t *testing.T) {
	t.Parallel()
	h := []Event{
		startPrio(0, "a", 1), elected(0.1, "a", 1), startPrio(0.5, "b", 2),
		{Mono: s(1.2), Proc: "b", Kind: KindKill}, stepdown(1.3, "a", 1), revoked(1.3, "a", 1, "", preempted),
		elected(2.5, "a", 2),
	}
	r, st := checkPrio(h)
	if len(r.Violations) != 0 || st.Yields != 1 {
		t.Fatalf("got violations %v and %d yields; want none and 1", kinds(r), st.Yields)
	}
	rows := Rows("test", r)
	if all := rows[len(rows)-1]; all.Preference != 0 {
		t.Errorf("all row: %+v", all)
	}
}

// A term ended by a pause is no yield, whatever reason the process gives
// once it wakes.
func TestCheckPriorityPausedIsNoYield(t *testing.T) {
	t.Parallel()
	h := []Event{
		startPrio(0, "a", 1), elected(0.1, "a", 1), startPrio(0.2, "b", 3),
		{Mono: s(0.5), Kind: KindFault, Proc: "a", Note: FaultPauseLeader}, {Mono: s(0.5), Proc: "a", Kind: KindPause},
		elected(1.6, "b", 2),
		{Mono: s(2.5), Proc: "a", Kind: KindResume}, {Mono: s(2.5), Kind: KindHeal, Note: FaultPauseLeader},
		stepdown(2.6, "a", 1), revoked(2.6, "a", 1, "", preempted),
	}
	r, st := checkPrio(h)
	if len(r.Violations) != 0 || st.Yields != 0 {
		t.Fatalf("got violations %v and %d yields; want none and none", kinds(r), st.Yields)
	}
}
