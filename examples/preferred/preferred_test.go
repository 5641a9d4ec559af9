package main

import (
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// want is the program's output: the order of its lines is the order of
// the events of both recipes.
const want = `== rolling upgrade (TTL 1s, MinTerm 1.5s)
v1-a (v1, priority 1): elected, token 1
v1-b (v1, priority 1): campaigns
v2-a (v2, priority 2): starts
v1-a (v1, priority 1): term 1 ends once it has led its MinTerm: elector: preempted by a candidate of a higher priority
v2-a (v2, priority 2): elected, token 2, after the OnElected of v1-a returned
registry: v1-a priority 1 aside, v1-b priority 1 aside, v2-a priority 2
v2-b (v2, priority 2): campaigns
v2-a (v2, priority 2): still leads past its MinTerm, token 2: an equal priority does not preempt
v1-a, v1-b: stopped; registry: v2-a priority 2, v2-b priority 2

== zone affinity (TTL 1s, MinTerm 1.5s)
a-1 (zone a, priority 2): elected, token 1
a-2 (zone a, priority 2): campaigns
b-1 (zone b, priority 1): stands aside
registry: a-1 priority 2, a-2 priority 2, b-1 priority 1 aside
zone a lost: a-1 and a-2 crash; a-1's lease and their entries stay until they expire
b-1 (zone b, priority 1): elected, token 2, about a TTL after the crash
a-1 (zone a, priority 2): restarts
b-1 (zone b, priority 1): term 2 ends once it has led its MinTerm: elector: preempted by a candidate of a higher priority
a-1 (zone a, priority 2): elected, token 3, after the OnElected of b-1 returned
`

// TestRecipes runs both recipes on a fake clock: the events come in the
// order above, each hand-over waits for the leader's MinTerm and no
// longer, and the zone-b replica is elected a TTL after zone a crashed,
// when its lease expires.
func TestRecipes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		tm, err := run(&out)
		if err != nil {
			t.Fatalf("run: %v\noutput:\n%s", err, out.String())
		}
		got, want := strings.Split(out.String(), "\n"), strings.Split(want, "\n")
		for i := range max(len(got), len(want)) {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("line %d:\n got %q\nwant %q", i+1, g, w)
			}
		}
		within := func(what string, d, lo, hi time.Duration) {
			if d < lo || d > hi {
				t.Errorf("%s: %v; want %v to %v", what, d, lo, hi)
			}
		}
		within("v1-a's term", tm.upgradeTerm, minTerm, minTerm+ttl/10)
		within("zone a's crash to b-1's election", tm.failover, ttl-ttl/3, ttl)
		within("b-1's term", tm.standbyTerm, minTerm, minTerm+ttl/10)
	})
}

// TestREADMESample: the sample output in examples/README.md is the
// program's.
func TestREADMESample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```text\n"+want+"```\n") {
		t.Errorf("../README.md has no text block with the output of go run ./preferred:\n%s", want)
	}
}
