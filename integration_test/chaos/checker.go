package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Violation kinds reported by [Check].
const (
	// ViolationOverlap: two processes' leadership intervals overlap.
	ViolationOverlap = "overlap"
	// ViolationStaleWrite: the fence accepted a write from a term that a
	// later term of another process had already superseded, or accepted
	// tokens out of order.
	ViolationStaleWrite = "stale-write-accepted"
	// ViolationTokenOrder: a term's token is not greater than the token of
	// the term before it.
	ViolationTokenOrder = "token-order"
	// ViolationRecovery: no leader within the bound after a fault healed.
	ViolationRecovery = "slow-recovery"
	// ViolationGap: no leader for longer than the bound with no fault to
	// explain it.
	ViolationGap = "leaderless-gap"
)

// Term is one leadership interval of one process, as the checker rebuilt it
// from the history: from its elected event to the first of its stepdown,
// the process's death, or the start of a SIGSTOP that froze it mid-term
// (after which it is a zombie whose writes fencing must refuse).
type Term struct {
	// Proc is the process and Token the term's fencing token; Key the
	// election's key in a keyed campaign ([CheckKeys]), "" otherwise.
	Proc  string `json:"proc"`
	Token uint64 `json:"token"`
	Key   string `json:"key,omitempty"`
	// Start and End bound the term on CLOCK_MONOTONIC (ns); EndReason is
	// stepdown, kill, pause, exit, re-elected or end-of-history.
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
	EndReason string `json:"end_reason"`
	// Why is the stepdown event's note (why the candidate saw its term
	// end), "" for other ends.
	Why string `json:"why,omitempty"`
	// Writes and Refused count the term's writes the fence accepted and
	// refused.
	Writes     int   `json:"writes"`
	Refused    int   `json:"refused"`
	nextOther  int64 // start of the first later term of another process, or max
	faultIndex int   // index of the last fault begun before Start, -1 for none
}

// Fault is one injected fault, from the nemesis's fault and heal events.
type Fault struct {
	// Kind is one of the Fault* constants; Target the process or the
	// nodes ("etcd 1,3") it hit.
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"`
	// Start and Heal are when it began and ended (CLOCK_MONOTONIC, ns).
	Start int64 `json:"start"`
	Heal  int64 `json:"heal"`
	// NewLeader is the time from Start to the first term begun after it (-1
	// if none); Recovery the time from Heal until a leader exists (0 if one
	// led at Heal).
	NewLeader time.Duration `json:"new_leader_ns"`
	Recovery  time.Duration `json:"recovery_ns"`
}

// Violation is one broken property, with the events around it.
type Violation struct {
	// Kind is one of the Violation* constants, Mono when it happened, and
	// Detail what happened, in words.
	Kind   string `json:"kind"`
	Mono   int64  `json:"mono"`
	Detail string `json:"detail"`
	// Fault is the kind of the last fault begun before the violation, or
	// "none".
	Fault string `json:"fault"`
	// Documented is set when the fault is one the driver's documentation
	// says breaks the property (Redlock nodes restarting without
	// persistence).
	Documented bool `json:"documented"`
	// Context holds the events within 1.5 s of Mono (writes only within
	// 300 ms).
	Context []Event `json:"context"`
}

// Params tune [Check].
type Params struct {
	// Bound is the longest a fault may leave the election without a
	// leader after it heals (TTL or session timeout plus a margin).
	Bound time.Duration
	// Documented reports whether a fault kind is one whose violations the
	// driver documents; nil means none.
	Documented func(faultKind string) bool
}

// Result is what [Check] found.
type Result struct {
	// Terms are sorted by Start; Faults by Start.
	Terms      []Term      `json:"terms"`
	Faults     []Fault     `json:"faults"`
	Violations []Violation `json:"violations"`
	// Accepted and Refused count the fence's writes.
	Accepted int `json:"writes_accepted"`
	Refused  int `json:"writes_refused"`
	// Priority holds a priority campaign's figures ([CheckPriority]).
	Priority *PriorityStats `json:"priority,omitempty"`

	refusedFault []int // per refused write, the index of the last fault begun before it, or -1
}

// Check rebuilds the terms and faults of a history and checks it: (1) no
// two processes' terms overlap; (2) the fence accepted no write from a
// superseded term, and accepted tokens never decreased; (3) a leader exists
// within p.Bound after each fault heals, and no leaderless gap longer than
// p.Bound happens outside faults; (4) tokens strictly increase from term to
// term.
func Check(events []Event, p Params) Result {
	events = slices.Clone(events)
	sort.SliceStable(events, func(i, j int) bool { return events[i].Mono < events[j].Mono })
	if len(events) == 0 {
		return Result{}
	}
	c := &checker{events: events, p: p, last: events[len(events)-1].Mono}
	c.r.Terms, c.r.Faults = rebuild(events, c.last)
	for i := range c.r.Terms {
		c.r.Terms[i].faultIndex = c.faultAt(c.r.Terms[i].Start)
	}
	c.checkTerms()
	c.checkWrites()
	c.checkRecovery()
	c.checkGaps()
	return c.r
}

// checker carries one [Check]: the sorted history, its last instant, and
// the result being built.
type checker struct {
	events []Event
	p      Params
	last   int64
	r      Result
}

// faultAt returns the index of the last fault begun at or before t, or -1.
func (c *checker) faultAt(t int64) int {
	return sort.Search(len(c.r.Faults), func(i int) bool { return c.r.Faults[i].Start > t }) - 1
}

// report records a violation of kind at t, with the fault and events
// around it.
func (c *checker) report(kind string, t int64, detail string) {
	v := Violation{Kind: kind, Mono: t, Detail: detail, Fault: "none"}
	if i := c.faultAt(t); i >= 0 {
		v.Fault = c.r.Faults[i].Kind
		v.Documented = c.p.Documented != nil && c.p.Documented(v.Fault)
	}
	v.Context = around(c.events, t, 1500*time.Millisecond)
	c.r.Violations = append(c.r.Violations, v)
}

// checkTerms checks (1) overlaps and (4) token order.
func (c *checker) checkTerms() {
	terms := c.r.Terms
	for j := range terms {
		tj := &terms[j]
		for i := range j {
			ti := &terms[i]
			if ti.Proc != tj.Proc && ti.End > tj.Start {
				c.report(ViolationOverlap, tj.Start, fmt.Sprintf("%s (token %d) elected at %s while %s (token %d, elected %s) led until %s (%s): overlap %v",
					tj.Proc, tj.Token, ms(tj.Start), ti.Proc, ti.Token, ms(ti.Start), ms(ti.End), ti.EndReason, time.Duration(ti.End-tj.Start)))
			}
		}
		if j > 0 && tj.Token <= terms[j-1].Token {
			c.report(ViolationTokenOrder, tj.Start, fmt.Sprintf("%s elected at %s with token %d, not above the previous term's %d (%s)",
				tj.Proc, ms(tj.Start), tj.Token, terms[j-1].Token, terms[j-1].Proc))
		}
	}
}

// indexTerms sets each term's nextOther and returns the terms by
// termKey (a later term of the same key wins).
func (c *checker) indexTerms() map[string]*Term {
	byKey := map[string]*Term{}
	for i := range c.r.Terms {
		t := &c.r.Terms[i]
		t.nextOther = 1<<63 - 1
		for _, u := range c.r.Terms[i+1:] {
			if u.Proc != t.Proc {
				t.nextOther = u.Start
				break
			}
		}
		byKey[termKey(t.Proc, t.Token)] = t
	}
	return byKey
}

// checkWrites checks (2) stale writes, and counts the writes.
func (c *checker) checkWrites() {
	byKey := c.indexTerms()
	var highest uint64
	for _, ev := range c.events {
		if ev.Kind != KindWrite {
			continue
		}
		t := byKey[termKey(ev.Proc, ev.Token)]
		if !ev.OK {
			c.r.Refused++
			c.r.refusedFault = append(c.r.refusedFault, c.faultAt(ev.Mono))
			if t != nil {
				t.Refused++
			}
			continue
		}
		c.r.Accepted++
		switch {
		case ev.Token < highest:
			c.report(ViolationStaleWrite, ev.Mono, fmt.Sprintf("fence accepted %s's token %d after accepting %d", ev.Proc, ev.Token, highest))
		case t == nil:
			c.report(ViolationStaleWrite, ev.Mono, fmt.Sprintf("fence accepted a write from %s with token %d, which no term of that process held", ev.Proc, ev.Token))
		case ev.Mono > t.nextOther:
			c.report(ViolationStaleWrite, ev.Mono, fmt.Sprintf("fence accepted %s's token %d at %s, after another process's later term began at %s",
				ev.Proc, ev.Token, ms(ev.Mono), ms(t.nextOther)))
		}
		if t != nil {
			t.Writes++
		}
		highest = max(highest, ev.Token)
	}
}

// checkRecovery checks (3) recovery after each fault, and times each
// fault's new leader and recovery.
func (c *checker) checkRecovery() {
	for i := range c.r.Faults {
		f := &c.r.Faults[i]
		f.NewLeader = -1
		for _, t := range c.r.Terms {
			if t.Start > f.Start {
				f.NewLeader = time.Duration(t.Start - f.Start)
				break
			}
		}
		f.Recovery = recovery(c.r.Terms, f.Heal, c.last)
		if f.Recovery > c.p.Bound {
			c.report(ViolationRecovery, f.Heal, fmt.Sprintf("%s healed at %s; no leader for %v (bound %v)", f.Kind, ms(f.Heal), f.Recovery, c.p.Bound))
		}
	}
}

// checkGaps checks (3) leaderless gaps outside faults.
func (c *checker) checkGaps() {
	var ledUntil int64 = c.events[0].Mono
	for _, t := range c.r.Terms {
		if gap := time.Duration(t.Start - ledUntil); gap > c.p.Bound && !faulty(c.r.Faults, ledUntil, t.Start, c.p.Bound) {
			c.report(ViolationGap, t.Start, fmt.Sprintf("no leader from %s to %s (%v, bound %v) and no fault", ms(ledUntil), ms(t.Start), gap, c.p.Bound))
		}
		ledUntil = max(ledUntil, t.End)
	}
}

// rebuild turns events into terms (sorted by start) and faults.
func rebuild(events []Event, last int64) ([]Term, []Fault) {
	var (
		terms  []Term
		faults []Fault
		open   = map[string]int{} // proc → index in terms of its open term
	)
	closeTerm := func(proc string, t int64, reason string) {
		if i, ok := open[proc]; ok {
			terms[i].End, terms[i].EndReason = t, reason
			delete(open, proc)
		}
	}
	for _, ev := range events {
		switch ev.Kind {
		case KindElected:
			closeTerm(ev.Proc, ev.Mono, "re-elected")
			open[ev.Proc] = len(terms)
			terms = append(terms, Term{Proc: ev.Proc, Token: ev.Token, Key: ev.Key, Start: ev.Mono})
		case KindStepdown:
			if i, ok := open[ev.Proc]; ok {
				terms[i].Why = ev.Note
			}
			closeTerm(ev.Proc, ev.Mono, "stepdown")
		case KindRevoked:
			for i := len(terms) - 1; i >= 0; i-- {
				if terms[i].Proc == ev.Proc && terms[i].Token == ev.Token {
					terms[i].Why = ev.Note
					break
				}
			}
		case KindKill:
			closeTerm(ev.Proc, ev.Mono, "kill")
		case KindPause:
			closeTerm(ev.Proc, ev.Mono, "pause")
		case KindExit:
			closeTerm(ev.Proc, ev.Mono, "exit")
		case KindFault:
			faults = append(faults, Fault{Kind: ev.Note, Target: ev.Proc, Start: ev.Mono, Heal: last})
		case KindHeal:
			if n := len(faults); n > 0 {
				faults[n-1].Heal = ev.Mono
			}
		}
	}
	for proc := range open {
		closeTerm(proc, last, "end-of-history")
	}
	return terms, faults
}

// recovery returns how long after heal the election had no leader.
func recovery(terms []Term, heal, last int64) time.Duration {
	for _, t := range terms {
		if t.Start <= heal && t.End > heal {
			return 0
		}
		if t.Start > heal {
			return time.Duration(t.Start - heal)
		}
	}
	return time.Duration(last - heal)
}

// faulty reports whether a fault was in progress (or healed less than bound
// earlier) at some point of [from, to].
func faulty(faults []Fault, from, to int64, bound time.Duration) bool {
	for _, f := range faults {
		if f.Start <= to && f.Heal+int64(bound) >= from {
			return true
		}
	}
	return false
}

// around returns the events within d of t, dropping all but the nearest
// writes so that a leader's steady writes do not drown the transitions.
func around(events []Event, t int64, d time.Duration) []Event {
	var out []Event
	const nearWrites = 300 * time.Millisecond
	for _, ev := range events {
		if ev.Mono < t-int64(d) || ev.Mono > t+int64(d) {
			continue
		}
		if ev.Kind == KindWrite && (ev.Mono < t-int64(nearWrites) || ev.Mono > t+int64(nearWrites)) {
			continue
		}
		out = append(out, ev)
	}
	return out
}

func termKey(proc string, token uint64) string { return fmt.Sprintf("%s/%d", proc, token) }

// ms formats a monotonic instant as seconds with millisecond precision.
func ms(t int64) string { return fmt.Sprintf("%.3fs", float64(t)/1e9) }
