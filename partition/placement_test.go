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
		pl := Place(group, 1024, names(10), DefaultLoadFactor)
		if got := slices.Max(loads(pl, 10)); got > 108 {
			t.Errorf("%s: max load %d; want ≤ 108 (ceil(1.05 × 102.4))", group, got)
		}
	}
}

func TestPlaceEmpty(t *testing.T) {
	for p, i := range Place("g", 4, nil, 1.05) {
		if i != -1 {
			t.Errorf("partition %d placed on %d with no members; want -1", p, i)
		}
	}
}

func TestPlaceMovement(t *testing.T) {
	ten := names(10)
	before := owners(Place("orders", 1024, ten, DefaultLoadFactor), ten)

	eleven := append(slices.Clone(ten), "worker-new")
	slices.Sort(eleven)
	after := owners(Place("orders", 1024, eleven, DefaultLoadFactor), eleven)
	join := moved(before, after)
	t.Logf("join moves %d partitions (ideal 93)", join)
	if join > 103 {
		t.Errorf("join moves %d partitions; want ≤ 103", join)
	}
	others := 0
	for p := range before {
		if before[p] != after[p] && after[p] != "worker-new" {
			others++
		}
	}
	// The cap shrinks from 108 to 98 when an 11th member joins: a few
	// partitions of members above the new cap move to their next choice.
	t.Logf("join moves %d partitions among the old members", others)
	if others > 10 {
		t.Errorf("join moves %d partitions among the old members; want ≤ 10", others)
	}

	nine := slices.DeleteFunc(slices.Clone(ten), func(s string) bool { return s == ten[3] })
	left := owners(Place("orders", 1024, nine, DefaultLoadFactor), nine)
	among := 0
	for p := range before {
		if before[p] != left[p] && before[p] != ten[3] {
			among++
		}
	}
	t.Logf("leave moves %d partitions among the survivors", among)
	if among > 10 {
		t.Errorf("leave moves %d partitions among the survivors; want ≤ 10", among)
	}
}
