package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// s is a monotonic instant s seconds into a synthetic history.
func s(sec float64) int64 { return int64(sec * float64(time.Second)) }

func elected(t float64, proc string, token uint64) Event {
	return Event{Mono: s(t), Proc: proc, Kind: KindElected, Token: token}
}
func stepdown(t float64, proc string, token uint64) Event {
	return Event{Mono: s(t), Proc: proc, Kind: KindStepdown, Token: token}
}
func write(t float64, proc string, token uint64, ok bool) Event {
	return Event{Mono: s(t), Proc: proc, Kind: KindWrite, Token: token, OK: ok}
}

var params = Params{Bound: 2 * time.Second, Documented: DocumentedRedlock}

// kinds returns the kinds of the violations in r, in order.
func kinds(r Result) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Kind)
	}
	return out
}

func TestCheckClean(t *testing.T) {
	t.Parallel()
	h := []Event{
		{Mono: s(0), Proc: "a", Kind: KindStart},
		elected(0.1, "a", 10), write(0.2, "a", 10, true), write(0.3, "a", 10, true), stepdown(1, "a", 10),
		elected(1.1, "b", 11), write(1.2, "b", 11, true),
		{Mono: s(1.5), Kind: KindFault, Proc: "b", Note: FaultKillLeader}, {Mono: s(1.5), Proc: "b", Kind: KindKill},
		{Mono: s(1.5), Kind: KindHeal, Note: FaultKillLeader},
		elected(2.6, "a", 12), write(2.7, "a", 12, true), write(2.8, "b", 11, false), stepdown(3, "a", 12),
	}
	r := Check(h, params)
	if len(r.Violations) != 0 {
		t.Fatalf("clean history: got violations %v", r.Violations)
	}
	if len(r.Terms) != 3 || r.Accepted != 4 || r.Refused != 1 || len(r.Faults) != 1 {
		t.Fatalf("got %d terms, %d accepted, %d refused, %d faults; want 3, 4, 1, 1", len(r.Terms), r.Accepted, r.Refused, len(r.Faults))
	}
	if f := r.Faults[0]; f.NewLeader != 1100*time.Millisecond || f.Recovery != 1100*time.Millisecond {
		t.Errorf("fault: new leader after %v, recovery %v; want 1.1s and 1.1s", f.NewLeader, f.Recovery)
	}
	rows := Rows("test", r)
	all := rows[len(rows)-1]
	if all.Fault != "all" || all.Terms != 3 || all.Handovers != 2 || all.StaleRefuse != 1 {
		t.Errorf("all row: %+v", all)
	}
}

func TestCheckOverlap(t *testing.T) {
	t.Parallel()
	h := []Event{
		elected(0, "a", 1), stepdown(1, "a", 1),
		elected(0.9, "b", 2), stepdown(2, "b", 2),
	}
	r := Check(h, params)
	if got := kinds(r); len(got) != 1 || got[0] != ViolationOverlap {
		t.Fatalf("got violations %v, want one overlap", got)
	}
	v := r.Violations[0]
	if !strings.Contains(v.Detail, "overlap 100ms") || len(v.Context) != 4 || v.Fault != "none" || v.Documented {
		t.Errorf("violation: %s", FormatViolation(v))
	}
}

// A process frozen mid-term leads only until the freeze; writes it makes
// after SIGCONT are a zombie's, which fencing must refuse.
func TestCheckPausedLeader(t *testing.T) {
	t.Parallel()
	base := []Event{
		elected(0, "a", 1), write(0.5, "a", 1, true),
		{Mono: s(1), Kind: KindFault, Proc: "a", Note: FaultPauseLeader}, {Mono: s(1), Proc: "a", Kind: KindPause},
		elected(2.2, "b", 2), write(2.2, "b", 2, true),
		{Mono: s(3), Proc: "a", Kind: KindResume}, {Mono: s(3), Kind: KindHeal, Note: FaultPauseLeader},
	}
	refused := append(base[:len(base):len(base)], write(3.001, "a", 1, false), stepdown(3.002, "a", 1))
	if r := Check(refused, params); len(r.Violations) != 0 || r.Refused != 1 {
		t.Fatalf("zombie write refused: got %v and %d refused, want no violation and 1", kinds(r), r.Refused)
	}

	// The same with the successor not yet having written: the fence
	// accepts the zombie's write, and the checker must call it stale.
	stale := []Event{
		elected(0, "a", 1), write(0.5, "a", 1, true),
		{Mono: s(1), Proc: "a", Kind: KindPause}, elected(2.2, "b", 2), {Mono: s(3), Proc: "a", Kind: KindResume},
		write(3.001, "a", 1, true), stepdown(3.002, "a", 1), write(3.1, "b", 2, true),
	}
	if got := kinds(Check(stale, params)); len(got) != 1 || got[0] != ViolationStaleWrite {
		t.Fatalf("zombie write accepted: got %v, want one %s", got, ViolationStaleWrite)
	}
}

func TestCheckFenceOrder(t *testing.T) {
	t.Parallel()
	h := []Event{
		elected(0, "a", 5), write(0.1, "a", 5, true), stepdown(0.2, "a", 5),
		elected(0.3, "b", 6), write(0.4, "b", 6, true), write(0.5, "x", 4, true), stepdown(0.6, "b", 6),
	}
	got := kinds(Check(h, params))
	if len(got) != 1 || got[0] != ViolationStaleWrite {
		t.Fatalf("got %v, want one %s", got, ViolationStaleWrite)
	}
}

func TestCheckTokenOrderDocumented(t *testing.T) {
	t.Parallel()
	h := []Event{
		elected(0, "a", 7), stepdown(1, "a", 7),
		{Mono: s(1.05), Kind: KindFault, Note: FaultRestartMajorNoAOF}, {Mono: s(1.1), Kind: KindHeal, Note: FaultRestartMajorNoAOF},
		elected(1.2, "b", 3), stepdown(2, "b", 3),
	}
	r := Check(h, params)
	if got := kinds(r); len(got) != 1 || got[0] != ViolationTokenOrder {
		t.Fatalf("got %v, want one %s", got, ViolationTokenOrder)
	}
	if v := r.Violations[0]; !v.Documented || v.Fault != FaultRestartMajorNoAOF {
		t.Errorf("violation after %s not marked documented: %+v", FaultRestartMajorNoAOF, v)
	}
}

func TestCheckRecovery(t *testing.T) {
	t.Parallel()
	h := []Event{
		elected(0, "a", 1), stepdown(0.5, "a", 1),
		{Mono: s(0.6), Kind: KindFault, Note: FaultKillMajor}, {Mono: s(1), Kind: KindHeal, Note: FaultKillMajor},
		elected(4, "b", 2), stepdown(4.5, "b", 2),
		elected(8, "a", 3), stepdown(9, "a", 3), // a gap of 3.5 s with no fault
	}
	got := kinds(Check(h, params))
	if len(got) != 2 || got[0] != ViolationRecovery || got[1] != ViolationGap {
		t.Fatalf("got %v, want %s then %s", got, ViolationRecovery, ViolationGap)
	}
}

func TestWriteSVGAndTable(t *testing.T) {
	t.Parallel()
	r := Check([]Event{elected(0, "a<1>", 1), stepdown(1, "a<1>", 1), elected(0.5, "b", 2), stepdown(2, "b", 2)}, params)
	path := t.TempDir() + "/t.svg"
	if err := WriteSVG(path, "test & run", r); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteTable(&b, Rows("c", r))
	if !strings.Contains(b.String(), "overlaps") || !strings.Contains(b.String(), "all") {
		t.Errorf("table:\n%s", b.String())
	}
}

func keyed(ev Event, key string) Event { ev.Key = key; return ev }

func revoked(t float64, proc string, token uint64, key, why string) Event {
	return Event{Mono: s(t), Proc: proc, Kind: KindRevoked, Token: token, Key: key, Note: why}
}

var partitionParams = KeyParams{
	Graceful: func(note string) bool { return note == "moved" || note == "leaving" },
	Handover: time.Second, Takeover: 2 * time.Second,
}

func TestCheckKeysClean(t *testing.T) {
	t.Parallel()
	// Two partitions: p0 moves from a to b gracefully; p1's holder b is
	// killed and a takes it over; each partition's tokens are its own.
	h := []Event{
		{Mono: s(0), Proc: "a", Kind: KindStart}, {Mono: s(0), Proc: "b", Kind: KindStart},
		keyed(elected(0.1, "a", 10), "p0"), keyed(elected(0.1, "b", 3), "p1"),
		keyed(write(0.2, "a", 10, true), "p0"), keyed(write(0.2, "b", 3, true), "p1"),
		keyed(stepdown(1, "a", 10), "p0"), revoked(1.05, "a", 10, "p0", "moved"),
		keyed(elected(1.2, "b", 11), "p0"), keyed(write(1.3, "b", 11, true), "p0"),
		{Mono: s(2), Kind: KindFault, Proc: "b", Note: FaultKillLeader}, {Mono: s(2), Proc: "b", Kind: KindKill},
		{Mono: s(2), Kind: KindHeal, Note: FaultKillLeader},
		keyed(elected(3.5, "a", 4), "p1"), keyed(elected(3.6, "a", 12), "p0"),
		keyed(write(3.7, "a", 4, true), "p1"), keyed(write(3.7, "b", 3, false), "p1"),
	}
	r, st := CheckKeys(h, params, partitionParams)
	if len(r.Violations) != 0 {
		t.Fatalf("clean history: got violations %v", kinds(r))
	}
	if len(r.Terms) != 5 || r.Accepted != 4 || r.Refused != 1 || len(r.Faults) != 1 {
		t.Fatalf("got %d terms, %d accepted, %d refused, %d faults; want 5, 4, 1, 1", len(r.Terms), r.Accepted, r.Refused, len(r.Faults))
	}
	if st.Keys != 2 || st.Graceful != 1 || st.WorstGraceful != 200*time.Millisecond || st.Takeovers != 2 || st.WorstTakeover != 1600*time.Millisecond {
		t.Errorf("stats %+v; want 2 keys, 1 graceful hand-over of 200ms, 2 takeovers, worst 1.6s", st)
	}
	rows := Rows("test", r)
	if all := rows[len(rows)-1]; all.Terms != 5 || all.Handovers != 3 || all.StaleRefuse != 1 {
		t.Errorf("all row: %+v; want 5 terms, 3 hand-overs (per key), 1 refused", all)
	}
}

func TestCheckKeysViolations(t *testing.T) {
	t.Parallel()
	h := []Event{
		{Mono: s(0), Proc: "a", Kind: KindStart}, {Mono: s(0), Proc: "b", Kind: KindStart},
		// p0: a and b own it at once, and the fence takes a's write after
		// b's term began.
		keyed(elected(0.1, "a", 10), "p0"), keyed(elected(0.5, "b", 11), "p0"),
		keyed(write(0.6, "a", 10, true), "p0"),
		// p1: tokens fall; a slow graceful hand-over.
		keyed(elected(0.1, "b", 5), "p1"), keyed(stepdown(1, "b", 5), "p1"), revoked(1, "b", 5, "p1", "moved"),
		keyed(elected(2.5, "a", 4), "p1"),
		// p2: its holder killed, taken over late (beyond the recovery
		// bound too); p0 taken over in time.
		keyed(elected(0.1, "b", 7), "p2"),
		{Mono: s(3), Kind: KindFault, Proc: "b", Note: FaultKillLeader}, {Mono: s(3), Proc: "b", Kind: KindKill},
		{Mono: s(3), Kind: KindHeal, Note: FaultKillLeader},
		keyed(elected(3.5, "a", 12), "p0"), keyed(elected(5.5, "a", 8), "p2"),
		// p4: a slow graceful hand-over, but a fault began on its way: not
		// timed.
		keyed(elected(0.1, "a", 1), "p4"), keyed(stepdown(2.5, "a", 1), "p4"), revoked(2.5, "a", 1, "p4", "moved"),
		keyed(elected(4, "b", 2), "p4"),
		// The same token values in another key are no conflict.
		keyed(elected(0.1, "a", 10), "p3"), keyed(write(6.1, "a", 10, true), "p3"),
	}
	r, _ := CheckKeys(h, params, partitionParams)
	want := map[string]int{ViolationOverlap: 1, ViolationStaleWrite: 1, ViolationTokenOrder: 1, ViolationSlowHandover: 1,
		ViolationSlowTakeover: 1, ViolationRecovery: 1}
	got := map[string]int{}
	for _, v := range r.Violations {
		got[v.Kind]++
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d violations; want %d (all: %v)", k, got[k], n, kinds(r))
		}
	}
	if len(r.Violations) != 6 {
		t.Errorf("got %v; want one of each kind", kinds(r))
	}
}

func TestCheckKeysLateReplica(t *testing.T) {
	t.Parallel()
	mig := KeyParams{Span: true, MustRefuse: IsLate}
	base := []Event{
		{Mono: s(0), Proc: "s0g0", Kind: KindStart},
		keyed(elected(0.1, "s0g0", 5), "m0"), keyed(write(0.2, "s0g0", 5, true), "m0"), keyed(stepdown(0.5, "s0g0", 5), "m0"),
		// Tokens rise across the switch: the new store's epoch 1.
		keyed(elected(0.6, "s0g1", 1<<48|900), "m0"), keyed(write(0.7, "s0g1", 1<<48|900, true), "m0"),
		{Mono: s(1), Proc: "s5m0late", Kind: KindStart},
	}
	refused := append(slices.Clone(base), Event{Mono: s(1.1), Proc: "s5m0late", Kind: KindRefused, Key: "m0", Note: "migrated"})
	if r, st := CheckKeys(refused, params, mig); len(r.Violations) != 0 || st.Refused != 1 {
		t.Errorf("refused late replica: violations %v, %d refused; want none and 1", kinds(r), st.Refused)
	}
	// A fault begun before a migration's span and healed within it counts
	// for that migration: the gap it explains is no leaderless gap.
	spanned := []Event{
		{Mono: s(0), Kind: KindFault, Proc: "etcd 1", Note: FaultKillMinor},
		keyed(elected(10, "s0g0", 1), "m1"), keyed(stepdown(10.5, "s0g0", 1), "m1"),
		{Mono: s(30), Kind: KindHeal, Note: FaultKillMinor},
		keyed(elected(31, "s1g0", 2), "m1"), keyed(stepdown(32, "s1g0", 2), "m1"),
	}
	if r, _ := CheckKeys(spanned, params, mig); len(r.Violations) != 0 || len(r.Faults) != 1 {
		t.Errorf("gap during a fault begun before the span: violations %v, %d faults; want none and 1", kinds(r), len(r.Faults))
	}
	won := append(slices.Clone(base), keyed(elected(1.2, "s5m0late", 6), "m0"), keyed(write(1.3, "s0g1", 1<<48|900, true), "m0"))
	r, _ := CheckKeys(won, params, mig)
	got := kinds(r)
	slices.Sort(got)
	if want := []string{ViolationLateNotRefused, ViolationLateWon, ViolationOverlap,
		ViolationStaleWrite, ViolationTokenOrder}; !slices.Equal(got, want) {
		t.Errorf("late replica elected: got %v; want %v", got, want)
	}
}
