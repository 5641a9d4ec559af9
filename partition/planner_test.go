package partition

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// settledBelief returns the placement of n partitions over members with
// weights, placed from nothing: the belief of a group at rest.
func settledBelief(n int, members []string, weights []int) []string {
	return owners(PlaceWeighted("g", n, members, weights, nil), members)
}

// ownedBy returns the partitions that belief places on id, as owned parts.
func ownedBy(belief []string, id string) map[int]bool {
	parts := map[int]bool{}
	for p, o := range belief {
		if o == id {
			parts[p] = true
		}
	}
	return parts
}

func TestPlanner(t *testing.T) {
	const n = 12
	t0 := time.Unix(1000, 0)
	pl := planner{group: "g", n: n, me: "a", poll: time.Second}
	abc := []string{"a", "b", "c"}
	ab := []string{"a", "b"}
	rest := settledBelief(n, abc, nil)
	restAB := settledBelief(n, ab, nil)
	heavy := settledBelief(n, ab, []int{3, 1})

	// departed: a reading shows x, a member that has left, holding the
	// first partition the belief over ab places on a; a wanted it (placed,
	// campaigning, no lease yet).
	departedP := slices.Index(restAB, "a")
	departed := slices.Clone(restAB)
	departed[departedP] = "x"
	departedParts := ownedBy(restAB, "a")
	delete(departedParts, departedP)

	// ended: the ownership of one of a's partitions has ended (false), its
	// lease not yet released.
	endedP := slices.Index(rest, "a")
	endedParts := ownedBy(rest, "a")
	endedParts[endedP] = false

	tests := []struct {
		name string
		in   planInput
		// quota is how many partitions the placement puts on a.
		quota int
		// campaigns and releases are how many partitions a campaigns
		// for and hands over; with, whom it awaits each from or hands it
		// to: nothing moves between the others.
		campaigns, releases int
		with                string
		check               bool // the placement starts reading the awaited holders
	}{
		{
			name:  "at rest",
			in:    planInput{members: abc, owners: rest, parts: ownedBy(rest, "a"), placed: ownedBy(rest, "a")},
			quota: 4,
		},
		{
			name:     "a member joins",
			in:       planInput{members: abc, owners: restAB, parts: ownedBy(restAB, "a"), placed: ownedBy(restAB, "a")},
			quota:    4,
			releases: 2,
			with:     "c",
		},
		{
			name:      "a member leaves",
			in:        planInput{members: ab, owners: rest, parts: ownedBy(rest, "a"), placed: ownedBy(rest, "a")},
			quota:     6,
			campaigns: 2,
			with:      "c", // departed: its leases run until they expire
			check:     true,
		},
		{
			name:      "a weight rises",
			in:        planInput{members: ab, weights: []int{3, 1}, owners: restAB, parts: ownedBy(restAB, "a"), placed: ownedBy(restAB, "a")},
			quota:     9,
			campaigns: 3,
			with:      "b",
			check:     true,
		},
		{
			name:     "a weight falls",
			in:       planInput{members: ab, owners: heavy, parts: ownedBy(heavy, "a"), placed: ownedBy(heavy, "a")},
			quota:    6,
			releases: 3,
			with:     "b",
		},
		{
			name:      "a partition held by a departed member",
			in:        planInput{members: ab, owners: departed, parts: departedParts, placed: ownedBy(restAB, "a")},
			quota:     6,
			campaigns: 1,
			with:      "x", // the one a wanted already: it counts as a's, awaited from x
			check:     true,
		},
		{
			name:  "a partition whose ownership ended is free",
			in:    planInput{members: abc, owners: rest, parts: endedParts, placed: ownedBy(rest, "a")},
			quota: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.now = t0
			d := pl.place(tt.in)
			if got := len(d.placed); got != tt.quota {
				t.Fatalf("placed %d partitions on a, want its quota %d", got, tt.quota)
			}
			for p := range d.placed {
				if d.owners[p] != "a" {
					t.Errorf("partition %d placed on a but believed %q's", p, d.owners[p])
				}
			}
			// Sticky: a keeps what it owns up to its quota.
			kept, owned := 0, 0
			for p, live := range tt.in.parts {
				if live {
					owned++
					if d.placed[p] {
						kept++
					}
				}
			}
			if want := min(owned, tt.quota); kept != want {
				t.Errorf("a keeps %d of the %d it owns, want %d: the placement is sticky", kept, owned, want)
			}
			for _, p := range d.campaign {
				if _, ok := tt.in.parts[p]; ok || !d.placed[p] {
					t.Errorf("campaigns for %d: has a lease %v, placed %v; want no lease, placed", p, ok, d.placed[p])
				}
			}
			from := map[int]string{}
			for _, p := range d.campaign {
				from[p] = d.awaited[p]
			}
			release := map[int]string{}
			for _, p := range d.release {
				release[p] = d.owners[p]
			}
			checkMoves(t, "campaigns for (awaited from)", from, tt.campaigns, tt.with)
			checkMoves(t, "hands over (to)", release, tt.releases, tt.with)
			if tt.name == "a partition held by a departed member" && from[departedP] != "x" {
				t.Errorf("campaigns for %v, want partition %d awaited from x", from, departedP)
			}
			if !maps.Equal(d.awaited, from) {
				t.Errorf("awaits %v, want %v: only the partitions it campaigns for, from their holders", d.awaited, from)
			}
			// Elsewhere: held by another identity, live or departed, as
			// far as a knows; a partition a wanted already (placed
			// before) and found held by a departed member counts as a's.
			for p := range d.placed {
				_, lease := tt.in.parts[p]
				want := tt.in.owners[p] != "" && tt.in.owners[p] != "a" && !lease && !tt.in.placed[p]
				if d.elsewhere[p] != want {
					t.Errorf("partition %d elsewhere %v, want %v (believed %q's)", p, d.elsewhere[p], want, tt.in.owners[p])
				}
			}
			if tt.name == "a partition whose ownership ended is free" && !d.placed[endedP] {
				t.Errorf("partition %d, whose ownership ended, placed on %q, want a: the only member short", endedP, d.owners[endedP])
			}
			if want := tt.check; !d.checkAt.IsZero() != want {
				t.Errorf("checkAt %v, want set %v: the first awaited partition starts the checks", d.checkAt, want)
			}
			if tt.check && !d.checkAt.Equal(t0.Add(pl.poll)) {
				t.Errorf("checkAt %v, want a poll from now (%v)", d.checkAt, t0.Add(pl.poll))
			}
		})
	}
}

// checkMoves checks that moves names want partitions, each to or from id.
func checkMoves(t *testing.T, what string, moves map[int]string, want int, id string) {
	t.Helper()
	if len(moves) != want {
		t.Errorf("a %s %d partitions %v, want %d", what, len(moves), moves, want)
	}
	for p, o := range moves {
		if o != id {
			t.Errorf("a %s partition %d with %q, want %q: nothing moves between the others", what, p, o, id)
		}
	}
}

// TestPlannerKeepsAwaited: a partition awaited from a departed member stays
// awaited from it when a later placement (from the belief, which names a
// live member now) places it here again.
func TestPlannerKeepsAwaited(t *testing.T) {
	pl := planner{group: "g", n: 12, me: "a", poll: time.Second}
	ab := []string{"a", "b"}
	belief := settledBelief(12, ab, nil)
	p := slices.Index(belief, "a")
	parts := ownedBy(belief, "a")
	delete(parts, p)
	d := pl.place(planInput{members: ab, owners: belief, parts: parts, placed: ownedBy(belief, "a"), awaited: map[int]string{p: "x"}, now: time.Unix(1, 0)})
	if got := d.awaited[p]; got != "x" {
		t.Errorf("partition %d awaited from %q, want %q, as before", p, got, "x")
	}
	if !d.checkAt.IsZero() {
		t.Errorf("checkAt %v, want zero: the checks are under way already", d.checkAt)
	}
}

// TestPlannerOutside: out of the member list a member keeps what it owns
// and takes nothing new; stopping or unsettled, it keeps nothing.
func TestPlannerOutside(t *testing.T) {
	pl := planner{group: "g", n: 4, me: "a"}
	parts := map[int]bool{0: true, 1: false, 3: true}
	if got, want := pl.keep(parts, true), map[int]bool{0: true, 3: true}; !maps.Equal(got, want) {
		t.Errorf("keep(parts, true) = %v, want %v: what is owned, not what is handed over", got, want)
	}
	if got := pl.keep(parts, false); len(got) != 0 {
		t.Errorf("keep(parts, false) = %v, want nothing", got)
	}
}

func TestPlannerJudge(t *testing.T) {
	pl := planner{group: "g", n: 8, me: "a"}
	members := []string{"a", "b", "c"}
	awaited := map[int]string{1: "b", 2: "x", 3: "b"}
	tests := []struct {
		name    string
		seen    map[int]uint64
		parts   []int
		holders []backend.Holder
		errs    []error
		wrong   int
		again   bool
		seen2   map[int]uint64
	}{
		{
			name:    "as believed",
			parts:   []int{1, 2},
			holders: []backend.Holder{{Identity: "b", Token: 7}, {Identity: "x", Token: 3}},
			wrong:   -1,
			seen2:   map[int]uint64{1: 7},
		},
		{
			name:    "another member holds it",
			parts:   []int{1, 2, 3},
			holders: []backend.Holder{{Identity: "b", Token: 7}, {Identity: "c", Token: 4}, {Identity: "c", Token: 5}},
			wrong:   2,
			seen2:   map[int]uint64{1: 7},
		},
		{
			name:    "its holder won it anew",
			seen:    map[int]uint64{1: 7},
			parts:   []int{1},
			holders: []backend.Holder{{Identity: "b", Token: 9}},
			wrong:   1,
			again:   true,
			seen2:   map[int]uint64{1: 7},
		},
		{
			name:    "the expected member does not hold it",
			parts:   []int{1, 3},
			holders: []backend.Holder{{}, {Identity: "x"}},
			wrong:   -1,
			seen2:   map[int]uint64{1: 0, 3: 0},
		},
		{
			name:    "a failed read, this member, a partition not awaited",
			parts:   []int{1, 3, 5},
			holders: []backend.Holder{{Identity: "c"}, {Identity: "a"}, {Identity: "c"}},
			errs:    []error{backend.ErrNoLeader, nil, nil},
			wrong:   -1,
			seen2:   map[int]uint64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.errs == nil {
				tt.errs = make([]error, len(tt.parts))
			}
			seen := maps.Clone(tt.seen)
			v := pl.judge(members, awaited, seen, tt.parts, tt.holders, tt.errs)
			if v.wrong != tt.wrong || v.again != tt.again {
				t.Errorf("wrong %d (again %v), want %d (again %v)", v.wrong, v.again, tt.wrong, tt.again)
			}
			if !maps.Equal(v.seen, tt.seen2) {
				t.Errorf("seen %v, want %v", v.seen, tt.seen2)
			}
			if !maps.Equal(seen, tt.seen) {
				t.Errorf("judge changed its input seen to %v", seen)
			}
		})
	}
}

func TestPlannerReadDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := time.Second
	small := planner{n: 64, poll: s}
	large := planner{n: 1024, poll: s}
	tests := []struct {
		name string
		pl   planner
		s    readSchedule
		want time.Time
	}{
		{"never read", small, readSchedule{now: t0, current: true}, t0},
		{"read a poll ago", small, readSchedule{now: t0, current: true, readAt: t0.Add(-s)}, t0},
		{"read just now", small, readSchedule{now: t0, current: true, readAt: t0.Add(-s / 2)}, t0.Add(s / 2)},
		{"large group, every 2 polls", large, readSchedule{now: t0, current: true, readAt: t0.Add(-s)}, t0.Add(s)},
		{"large group, campaigns wait", large, readSchedule{now: t0, current: true, readAt: t0.Add(-s), waiting: true}, t0.Add(3 * s)},
		{"members changed, small", small, readSchedule{now: t0, readAt: t0.Add(-s / 10), changedAt: t0.Add(-s / 10)}, t0.Add(s/4 - s/10)},
		{"members changed, large", large, readSchedule{now: t0, readAt: t0.Add(-s / 10), changedAt: t0.Add(-s / 10)}, t0.Add(s - s/10)},
		{"members changed a while ago", small, readSchedule{now: t0, changedAt: t0.Add(-s)}, t0},
		{"campaigns failing", small, readSchedule{now: t0, current: true, readAt: t0.Add(-2 * s), cut: t0.Add(-s / 2)}, t0.Add(s / 2)},
		{"campaigns failed long ago", small, readSchedule{now: t0, current: true, readAt: t0.Add(-2 * s), cut: t0.Add(-2 * s)}, t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pl.readDue(tt.s); !got.Equal(tt.want) {
				t.Errorf("readDue = now%+v, want now%+v", got.Sub(t0), tt.want.Sub(t0))
			}
		})
	}
}

func TestPlannerLapsing(t *testing.T) {
	pl := planner{n: 4, me: "a", poll: time.Second}
	t0 := time.Unix(1000, 0)
	got := pl.lapsing([]string{"a", "b"}, []string{"a", "x", "", "y"}, []time.Duration{0, 3 * time.Second, 0, 0}, t0)
	want := map[int]time.Time{
		1: t0.Add(3*time.Second + time.Second/lapseMargin), // at its lease's end, plus a margin
		3: t0.Add(time.Second / lapseEvery),                // its end unknown: every poll/lapseEvery
	}
	if !maps.Equal(got, want) {
		t.Errorf("lapsing = %v, want %v", got, want)
	}
	if got := pl.lapsing([]string{"a", "b"}, []string{"a", "b"}, make([]time.Duration, 2), t0); got != nil {
		t.Errorf("lapsing with no departed holder = %v, want nil", got)
	}
}
