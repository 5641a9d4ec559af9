package partition

import (
	"fmt"
	"slices"
	"testing"
)

func names(m int) []string {
	var out []string
	for i := range m {
		out = append(out, fmt.Sprintf("worker-%d", i))
	}
	slices.Sort(out)
	return out
}

func loads(pl []int, m int) []int {
	l := make([]int, m)
	for _, i := range pl {
		l[i]++
	}
	return l
}

// owners maps each partition to its member's identity.
func owners(pl []int, members []string) []string {
	out := make([]string, len(pl))
	for p, i := range pl {
		out[p] = members[i]
	}
	return out
}

func moved(a, b []string) int {
	n := 0
	for p := range a {
		if a[p] != b[p] {
			n++
		}
	}
	return n
}

func TestPlaceBalance(t *testing.T) {
	for _, group := range []string{"orders", "jobs", "g"} {
		pl := Place(group, 1024, names(10), nil)
		if got := slices.Max(loads(pl, 10)); got > 103 {
			t.Errorf("%s: max load %d; want ≤ 103 (ceil(102.4))", group, got)
		}
		q := Quotas(group, 1024, names(10))
		if !slices.Equal(loads(pl, 10), q) {
			t.Errorf("%s: loads %v; want the quotas %v", group, loads(pl, 10), q)
		}
	}
}

func TestQuotas(t *testing.T) {
	for _, c := range []struct{ n, m int }{{1024, 10}, {1, 3}, {64, 5}, {7, 7}, {5, 1}} {
		q := Quotas("g", c.n, names(c.m))
		sum := 0
		for _, x := range q {
			sum += x
			if x != c.n/c.m && x != c.n/c.m+1 {
				t.Errorf("n=%d m=%d: quota %d; want %d or %d", c.n, c.m, x, c.n/c.m, c.n/c.m+1)
			}
		}
		if sum != c.n {
			t.Errorf("n=%d m=%d: quotas %v sum to %d", c.n, c.m, q, sum)
		}
	}
}

func TestPlaceEmpty(t *testing.T) {
	for p, i := range Place("g", 4, nil, nil) {
		if i != -1 {
			t.Errorf("partition %d placed on %d with no members; want -1", p, i)
		}
	}
}

// TestPlaceSticky: a placement is its own fixed point: members holding
// what it places keep it.
func TestPlaceSticky(t *testing.T) {
	ten := names(10)
	before := owners(Place("orders", 1024, ten, nil), ten)
	if again := owners(Place("orders", 1024, ten, before), ten); moved(before, again) != 0 {
		t.Errorf("placing the placement again moves %d partitions; want 0", moved(before, again))
	}
}

func TestPlaceMovement(t *testing.T) {
	ten := names(10)
	before := owners(Place("orders", 1024, ten, nil), ten)

	eleven := append(slices.Clone(ten), "worker-new")
	slices.Sort(eleven)
	after := owners(Place("orders", 1024, eleven, before), eleven)
	join := moved(before, after)
	t.Logf("join moves %d partitions (ideal 93)", join)
	if join > 94 {
		t.Errorf("join moves %d partitions; want ≤ 94 (the newcomer's quota)", join)
	}
	for p := range before {
		if before[p] != after[p] && after[p] != "worker-new" {
			t.Errorf("join moves partition %d from %s to %s; want only moves to the newcomer", p, before[p], after[p])
		}
	}
	if got := slices.Max(loads(Place("orders", 1024, eleven, before), 11)); got > 94 {
		t.Errorf("after the join the most loaded member holds %d; want ≤ 94", got)
	}

	// The newcomer leaves again, then an old member does.
	back := owners(Place("orders", 1024, ten, after), ten)
	nine := slices.DeleteFunc(slices.Clone(ten), func(s string) bool { return s == ten[3] })
	left := owners(Place("orders", 1024, nine, back), nine)
	for _, c := range []struct {
		who           string
		before, after []string
	}{{"worker-new", after, back}, {ten[3], back, left}} {
		for p := range c.before {
			if c.before[p] != c.after[p] && c.before[p] != c.who {
				t.Errorf("%s leaving moves partition %d from %s to %s; want only its own to move", c.who, p, c.before[p], c.after[p])
			}
		}
	}
	if got := slices.Max(loads(Place("orders", 1024, nine, back), 9)); got > 114 {
		t.Errorf("after a leave the most loaded member holds %d; want ≤ ceil(1024/9) = 114", got)
	}
}
