package main

import (
	"os"
	"testing"
)

// TestTableInvariants runs the example and checks both tables: every
// partition owned by the member placement puts it on, loads summing to the
// number of partitions and within the cap, the crashed worker gone, and
// the partitions it owned taken over with a higher token.
func TestTableInvariants(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	before, after, err := run(devnull)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string, members int, cap int) {
		tab := before
		if when == "after" {
			tab = after
		}
		if len(tab.Members) != members {
			t.Errorf("%s: %d members; want %d", when, len(tab.Members), members)
		}
		total := 0
		for _, m := range tab.Members {
			total += m.Owned
			if m.Owned > cap {
				t.Errorf("%s: %s owns %d; want ≤ %d", when, m.Identity, m.Owned, cap)
			}
		}
		if total != partitions {
			t.Errorf("%s: members own %d partitions; want %d", when, total, partitions)
		}
		for _, o := range tab.Partitions {
			if o.Owner == "" || o.Owner != o.Placed || o.Token == 0 {
				t.Errorf("%s: partition %d owned by %q (token %d), placed on %q; want owned as placed, with a token", when, o.Partition, o.Owner, o.Token, o.Placed)
			}
		}
	}
	check("before", 3, 5) // ceil(1.05 × 12/3)
	check("after", 2, 7)  // ceil(1.05 × 12/2)
	for p, o := range before.Partitions {
		a := after.Partitions[p]
		switch {
		case a.Owner == "worker-b":
			t.Errorf("after: partition %d still owned by the crashed worker-b", p)
		case o.Owner == "worker-b" && a.Token <= o.Token:
			t.Errorf("partition %d taken over from worker-b with token %d; want > %d", p, a.Token, o.Token)
		}
	}
}
