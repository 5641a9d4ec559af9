package partition

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// quotasBefore is Quotas as it was before weights: the reference that
// QuotasWeighted with equal weights must match, so that no existing
// group's placement changes.
func quotasBefore(group string, n int, members []string) []int {
	m := len(members)
	q := make([]int, m)
	if m == 0 {
		return q
	}
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	seeds := seedsOf(group, members)
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(mix(seeds[y]), mix(seeds[x])), cmp.Compare(x, y))
	})
	for k, i := range order {
		q[i] = n / m
		if k < n%m {
			q[i]++
		}
	}
	return q
}

// randomMembers returns between 1 and most sorted, distinct identities.
func randomMembers(r *rand.Rand, most int) []string {
	var ms []string
	for range 1 + r.IntN(most) {
		ms = append(ms, fmt.Sprintf("m-%x", r.Uint32()))
	}
	slices.Sort(ms)
	return slices.Compact(ms)
}

// randomWeights returns m weights: mostly small, some up to MaxWeight.
func randomWeights(r *rand.Rand, m int) []int {
	w := make([]int, m)
	for i := range w {
		if r.IntN(8) == 0 {
			w[i] = 1 + r.IntN(MaxWeight)
		} else {
			w[i] = 1 + r.IntN(4)
		}
	}
	return w
}

// checkQuotas fails unless q sums to n and gives each member its share
// n·w/W rounded down or up.
func checkQuotas(t *testing.T, what string, n int, weights, q []int) {
	t.Helper()
	total, sum := 0, 0
	for _, w := range weights {
		total += w
	}
	for i, w := range weights {
		sum += q[i]
		lo := n * w / total
		hi := lo
		if n*w%total != 0 {
			hi++
		}
		if q[i] < lo || q[i] > hi {
			t.Errorf("%s: member %d of weight %d has quota %d; want %d·%d/%d rounded down or up (%d or %d)", what, i, w, q[i], n, w, total, lo, hi)
		}
	}
	if sum != n {
		t.Errorf("%s: quotas %v sum to %d; want n = %d", what, q, sum, n)
	}
}

func TestQuotasWeighted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for k := range 2000 {
		members := randomMembers(r, 40)
		weights := randomWeights(r, len(members))
		n := r.IntN(3000)
		what := fmt.Sprintf("case %d (n=%d, weights %v)", k, n, weights)
		q := QuotasWeighted("g", n, members, weights)
		checkQuotas(t, what, n, weights, q)
		if k%10 != 0 {
			continue
		}
		pl := PlaceWeighted("g", n, members, weights, nil)
		if got := loads(pl, len(members)); !slices.Equal(got, q) {
			t.Fatalf("%s: PlaceWeighted loads %v; want the quotas %v", what, got, q)
		}
	}
	// An exact division leaves no remainder to hand out.
	if got := QuotasWeighted("g", 16, []string{"a", "b", "c"}, []int{1, 1, 2}); !slices.Equal(got, []int{4, 4, 8}) {
		t.Errorf("16 partitions over weights 1, 1, 2: quotas %v; want [4 4 8]", got)
	}
}

// TestWeightedEqualIsUnweighted: with every weight equal, whatever the
// weight, the quotas are those of Quotas before weights, and the placement
// Place's, over many member lists, sizes and holders.
func TestWeightedEqualIsUnweighted(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for k := range 300 {
		members := randomMembers(r, 30)
		n := r.IntN(1000)
		owners := make([]string, n)
		for p := range owners {
			switch r.IntN(4) {
			case 0: // none
			case 1:
				owners[p] = "departed"
			default:
				owners[p] = members[r.IntN(len(members))]
			}
		}
		want := quotasBefore("grp", n, members)
		if got := Quotas("grp", n, members); !slices.Equal(got, want) {
			t.Fatalf("case %d: Quotas %v; want %v, as before weights", k, got, want)
		}
		place := Place("grp", n, members, owners)
		for _, w := range []int{1, 2, 7, MaxWeight} {
			weights := slices.Repeat([]int{w}, len(members))
			if got := QuotasWeighted("grp", n, members, weights); !slices.Equal(got, want) {
				t.Fatalf("case %d, every weight %d: quotas %v; want %v, as Quotas", k, w, got, want)
			}
			if got := PlaceWeighted("grp", n, members, weights, owners); !slices.Equal(got, place) {
				t.Fatalf("case %d, every weight %d: the placement differs from Place's", k, w)
			}
		}
	}
}

// TestPlaceWeightedSticky: a weighted placement is its own fixed point,
// and members keep what they hold up to their quota.
func TestPlaceWeightedSticky(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for k := range 300 {
		members := randomMembers(r, 20)
		weights := randomWeights(r, len(members))
		n := 1 + r.IntN(1500)
		before := owners(PlaceWeighted("s", n, members, weights, nil), members)
		if again := owners(PlaceWeighted("s", n, members, weights, before), members); moved(before, again) != 0 {
			t.Fatalf("case %d: placing the placement again moves %d partitions; want 0", k, moved(before, again))
		}
		// Holders at random: each member keeps min(held, quota).
		held := make([]string, n)
		for p := range held {
			held[p] = members[r.IntN(len(members))]
		}
		q := QuotasWeighted("s", n, members, weights)
		after := owners(PlaceWeighted("s", n, members, weights, held), members)
		for i, id := range members {
			had, kept := 0, 0
			for p := range held {
				if held[p] == id {
					had++
					if after[p] == id {
						kept++
					}
				}
			}
			if kept != min(had, q[i]) {
				t.Fatalf("case %d: %s held %d (quota %d) and keeps %d; want %d", k, id, had, q[i], kept, min(had, q[i]))
			}
		}
	}
}

// TestPlaceWeightedJoin: a member of weight 3 joining ten of weight 1 takes
// three shares, from the others, and nothing moves between them; with the
// others' weights unequal, a partition moves between two of them only from
// one whose quota fell to one whose quota rose, at most one per such
// member.
func TestPlaceWeightedJoin(t *testing.T) {
	ten := names(10)
	before := owners(Place("orders", 1024, ten, nil), ten)
	eleven := append(slices.Clone(ten), "worker-big")
	slices.Sort(eleven)
	weights := make([]int, 11)
	big := slices.Index(eleven, "worker-big")
	for i := range weights {
		weights[i] = 1
	}
	weights[big] = 3
	q := QuotasWeighted("orders", 1024, eleven, weights)
	if q[big] < 236 || q[big] > 237 {
		t.Errorf("the member of weight 3 of 13 has quota %d; want 1024·3/13 = 236.3 rounded", q[big])
	}
	after := owners(PlaceWeighted("orders", 1024, eleven, weights, before), eleven)
	if got := moved(before, after); got != q[big] {
		t.Errorf("the join moves %d partitions; want %d, the newcomer's quota", got, q[big])
	}
	for p := range before {
		if before[p] != after[p] && after[p] != "worker-big" {
			t.Errorf("the join moves partition %d from %s to %s; want only moves to the newcomer", p, before[p], after[p])
		}
	}

	r := rand.New(rand.NewPCG(7, 8))
	rises := 0
	for k := range 500 {
		members := randomMembers(r, 12)
		weights := randomWeights(r, len(members))
		n := 1 + r.IntN(1000)
		old := owners(PlaceWeighted("j", n, members, weights, nil), members)
		qOld := QuotasWeighted("j", n, members, weights)
		joined := append(slices.Clone(members), "zz-joiner")
		wJoined := append(slices.Clone(weights), 1+r.IntN(5))
		qNew := QuotasWeighted("j", n, joined, wJoined)
		now := owners(PlaceWeighted("j", n, joined, wJoined, old), joined)
		into := map[string]int{}
		for p := range old {
			if old[p] == now[p] || now[p] == "zz-joiner" {
				continue
			}
			from, to := slices.Index(members, old[p]), slices.Index(members, now[p])
			if qNew[to] <= qOld[to] || qNew[from] >= qOld[from] {
				t.Fatalf("case %d: the join moves partition %d from %s (quota %d → %d) to %s (quota %d → %d); want moves between the others only from a quota that fell to one that rose",
					k, p, old[p], qOld[from], qNew[from], now[p], qOld[to], qNew[to])
			}
			if into[now[p]]++; into[now[p]] > 1 {
				t.Fatalf("case %d: the join moves %d partitions to %s from the others; want at most 1", k, into[now[p]], now[p])
			}
			rises++
		}
	}
	t.Logf("moves between the others over 500 random joins: %d (largest-remainder rounding)", rises)
}

// TestWeightsHostile: weights below 1 count as 1, above MaxWeight as
// MaxWeight, missing ones as 1; n ≤ 0 gives nothing; nothing panics.
func TestWeightsHostile(t *testing.T) {
	members := []string{"a", "b", "c", "d"}
	for _, c := range []struct {
		weights, same []int
	}{
		{[]int{0, -1, math.MinInt, 1}, []int{1, 1, 1, 1}},
		{[]int{2, 0, 3, -7}, []int{2, 1, 3, 1}},
		{[]int{math.MaxInt, 1, 1, MaxWeight + 1}, []int{MaxWeight, 1, 1, MaxWeight}},
		{[]int{2}, []int{2, 1, 1, 1}},
		{[]int{2, 1, 1, 1, 9, 9}, []int{2, 1, 1, 1}},
		{[]int{}, nil},
	} {
		for _, n := range []int{1, 7, 100, 4099} {
			got, want := QuotasWeighted("h", n, members, c.weights), QuotasWeighted("h", n, members, c.same)
			if !slices.Equal(got, want) {
				t.Errorf("n=%d, weights %v: quotas %v; want %v, as with weights %v", n, c.weights, got, want, c.same)
			}
			if pl, want := PlaceWeighted("h", n, members, c.weights, nil), PlaceWeighted("h", n, members, c.same, nil); !slices.Equal(pl, want) {
				t.Errorf("n=%d, weights %v: the placement differs from that with weights %v", n, c.weights, c.same)
			}
		}
	}
	for _, n := range []int{0, -1, math.MinInt} {
		if q := QuotasWeighted("h", n, members, []int{1, 2, 3, 4}); !slices.Equal(q, []int{0, 0, 0, 0}) {
			t.Errorf("n=%d: quotas %v; want all 0", n, q)
		}
		if pl := PlaceWeighted("h", n, members, []int{1, 2, 3, 4}, []string{"a"}); len(pl) != 0 {
			t.Errorf("n=%d: placement %v; want empty", n, pl)
		}
	}
	// A huge n: n·w overflows an int, the quotas do not.
	const huge = math.MaxInt - 12345
	q := QuotasWeighted("h", huge, members, []int{MaxWeight, MaxWeight - 1, 3, 1})
	sum := 0
	for _, x := range q {
		sum += x
	}
	if sum != huge || q[0] < q[1] || q[1] < q[2] || q[2] < q[3] {
		t.Errorf("n=%d: quotas %v sum to %d; want n, in the order of the weights", huge, q, sum)
	}
	if q := QuotasWeighted("h", 5, nil, []int{3}); len(q) != 0 {
		t.Errorf("no members: quotas %v; want none", q)
	}
}

func TestParseSlot(t *testing.T) {
	for _, c := range []struct {
		in   string
		want seat
	}{
		{"", seat{}},
		{"worker-1", seat{"worker-1", 1}},
		{"worker-1;weight=2", seat{"worker-1", 2}},
		{"worker-1;weight=1", seat{"worker-1", 1}},
		{"worker-1;weight=1000", seat{"worker-1", 1000}},
		{"worker-1;weight=1001", seat{"worker-1;weight=1001", 1}},
		{"worker-1;weight=0", seat{"worker-1;weight=0", 1}},
		{"worker-1;weight=02", seat{"worker-1;weight=02", 1}},
		{"worker-1;weight=", seat{"worker-1;weight=", 1}},
		{"worker-1;weight=-2", seat{"worker-1;weight=-2", 1}},
		{"worker-1;weight=+2", seat{"worker-1;weight=+2", 1}},
		{"worker-1;weight= 2", seat{"worker-1;weight= 2", 1}},
		{"worker-1;weight=2x", seat{"worker-1;weight=2x", 1}},
		{"worker-1;weight=99999999999999999999999", seat{"worker-1;weight=99999999999999999999999", 1}},
		{"worker-1;weight=٣", seat{"worker-1;weight=٣", 1}},
		{";weight=3", seat{";weight=3", 1}},
		{"a;weight=x;weight=3", seat{"a;weight=x", 3}},
		{"a;weight=3;weight=x", seat{"a;weight=3;weight=x", 1}},
		{"a;WEIGHT=3", seat{"a;WEIGHT=3", 1}},
	} {
		if got := parseSlot(c.in); got != c.want {
			t.Errorf("parseSlot(%q) = %+v; want %+v", c.in, got, c.want)
		}
	}
	for _, w := range []int{1, 2, 999, MaxWeight} {
		if got := parseSlot(slotIdentity("w", w)); got != (seat{"w", w}) {
			t.Errorf("parseSlot(slotIdentity(w, %d)) = %+v; want the same member back", w, got)
		}
	}
	if got := slotIdentity("w", 1); got != "w" {
		t.Errorf("slotIdentity(w, 1) = %q; want the plain identity", got)
	}
}

// TestRoster: one identity in two slots counts once, with its largest
// weight, whatever the slots' order.
func TestRoster(t *testing.T) {
	seats := []seat{{"b", 1}, {}, {"a", 3}, {"b", 4}, {"c", 1}, {"b", 2}, {}}
	for k := range 20 {
		s := slices.Clone(seats)
		rand.New(rand.NewPCG(uint64(k), 9)).Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		ids, ws := roster(s)
		if !slices.Equal(ids, []string{"a", "b", "c"}) || !slices.Equal(ws, []int{3, 4, 1}) {
			t.Fatalf("roster(%v) = %v, %v; want [a b c], [3 4 1]", s, ids, ws)
		}
	}
	if ids, ws := roster([]seat{{}, {}}); ids != nil || ws != nil {
		t.Errorf("roster of free slots = %v, %v; want none", ids, ws)
	}
}

func TestNewValidatesWeight(t *testing.T) {
	b := memory.New()
	defer b.Close()
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Weight: -1}, "Options.Weight is -1; want in [1, 1000] (or 0 for 1)"},
		{Options{Weight: MaxWeight + 1}, "Options.Weight is 1001; want in [1, 1000] (or 0 for 1)"},
		{Options{Identity: "w;weight=2"}, `Options.Identity "w;weight=2" contains ";weight="`},
		{Options{Identity: "w;weight=2", Weight: 2}, `Options.Identity "w;weight=2" contains ";weight="`},
		{Options{Identity: strings.Repeat("x", backend.MaxElectionLen-2), Weight: 10}, `Options.Identity with ";weight=10" appended`},
	} {
		_, err := New(b, "g", 1, &c.o)
		if err == nil || !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want an ErrInvalid naming %q", c.o, err, c.want)
		}
	}
	for _, c := range []struct{ weight, want int }{{0, 1}, {1, 1}, {7, 7}, {MaxWeight, MaxWeight}} {
		a, err := New(b, "g", 1, &Options{Identity: strings.Repeat("x", backend.MaxElectionLen-12), Weight: c.weight})
		if err != nil {
			t.Fatalf("Weight %d: %v", c.weight, err)
		}
		if a.opts.Weight != c.want {
			t.Errorf("Weight %d resolves to %d; want %d", c.weight, a.opts.Weight, c.want)
		}
	}
}
