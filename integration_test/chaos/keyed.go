package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"
)

// Violation kinds reported by [CheckKeys] only.
const (
	// ViolationSlowHandover: a term ended gracefully (Params.Graceful),
	// outside any fault, and the next term of its key began more than
	// Params.Handover later.
	ViolationSlowHandover = "slow-handover"
	// ViolationSlowTakeover: the nemesis killed the process holding a
	// term, and the next term of its key began more than Params.Takeover
	// after the kill.
	ViolationSlowTakeover = "slow-takeover"
	// ViolationLateWon: a process that must be refused (Params.MustRefuse)
	// was elected.
	ViolationLateWon = "late-replica-won"
	// ViolationLateNotRefused: a process that must be refused never
	// reported its refusal.
	ViolationLateNotRefused = "late-replica-not-refused"
)

// KeyParams tune what [CheckKeys] checks beyond [Check]'s properties.
type KeyParams struct {
	// Span restricts the faults and process events checked with a key to
	// the key's own span (from its first event to its last): a key is one
	// migration, run after the one before. Without it every key sees the
	// whole campaign's faults (partitions, all live at once).
	Span bool
	// Graceful reports whether a stepdown's note says the term ended by a
	// cooperative hand-over; nil means none does.
	Graceful func(note string) bool
	// Handover bounds the time from a graceful stepdown to the next term of
	// the same key, when no fault meets the hand-over (see checkHandovers);
	// 0 skips the check.
	Handover time.Duration
	// Takeover bounds the time from the kill of a process holding a term
	// to the next term of the same key; 0 skips the check.
	Takeover time.Duration
	// MustRefuse reports whether a process must be refused and never
	// elected (a replica left on the old store after a migration); nil
	// means none.
	MustRefuse func(proc string) bool
}

// KeyStats are the hand-over figures of a keyed campaign.
type KeyStats struct {
	// Keys counts the elections checked.
	Keys int `json:"keys"`
	// Graceful counts the graceful hand-overs timed (outside faults) and
	// WorstGraceful is the longest; Takeovers and WorstTakeover the same
	// for terms whose process the nemesis killed.
	Graceful      int           `json:"graceful_handovers"`
	WorstGraceful time.Duration `json:"worst_graceful_ns"`
	Takeovers     int           `json:"takeovers"`
	WorstTakeover time.Duration `json:"worst_takeover_ns"`
	// Refused counts the processes refused as Params.MustRefuse wants.
	Refused int `json:"refused"`
}

// CheckKeys checks a history whose elected, stepdown and write events carry
// a [Event.Key]: each key is an election of its own with a fence resource
// of its own (a partition, or one whole migration). It runs [Check] on each
// key's events together with the events every key shares (faults, heals,
// kills, pauses, exits), so that every property holds per key, and adds:
// graceful hand-overs and takeovers after a kill within their bounds, and
// refused processes never elected. The result lists every key's terms,
// grouped by key, and the campaign's faults once, each with the worst
// recovery over the keys.
func CheckKeys(events []Event, p Params, kp KeyParams) (Result, KeyStats) {
	events = slices.Clone(events)
	sort.SliceStable(events, func(i, j int) bool { return events[i].Mono < events[j].Mono })
	if len(events) == 0 {
		return Result{}, KeyStats{}
	}
	var shared []Event
	keyed := map[string][]Event{}
	for _, ev := range events {
		if ev.Key == "" {
			shared = append(shared, ev)
		} else {
			keyed[ev.Key] = append(keyed[ev.Key], ev)
		}
	}
	keys := make([]string, 0, len(keyed))
	for k := range keyed {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })

	all := &checker{events: events, p: p, last: events[len(events)-1].Mono}
	_, all.r.Faults = rebuild(shared, all.last)
	for i := range all.r.Faults {
		all.r.Faults[i].NewLeader = -1
	}
	for _, k := range keys {
		all.merge(k, Check(withShared(keyed[k], shared, kp.Span), p))
	}
	for i := range all.r.Terms {
		all.r.Terms[i].faultIndex = all.faultAt(all.r.Terms[i].Start)
	}
	for _, ev := range events {
		if ev.Kind == KindWrite && !ev.OK {
			all.r.refusedFault = append(all.r.refusedFault, all.faultAt(ev.Mono))
		}
	}
	st := KeyStats{Keys: len(keys)}
	all.checkHandovers(kp, &st)
	all.checkRefusals(kp, &st)
	return all.r, st
}

// withShared returns a key's events merged with the shared events; with
// span, only the faults (each with its heal) that overlap the key's span,
// and the other shared events within it.
func withShared(own, shared []Event, span bool) []Event {
	lo, hi := own[0].Mono, own[len(own)-1].Mono
	keep := make([]bool, len(shared))
	fault := -1 // index of the fault begun last, as rebuild pairs them
	for i, ev := range shared {
		keep[i] = !span || (ev.Mono >= lo && ev.Mono <= hi)
		switch ev.Kind {
		case KindFault:
			fault = i
			keep[i] = keep[i] || (span && ev.Mono <= hi) // unless it healed before lo (below)
		case KindHeal:
			if fault >= 0 && shared[fault].Mono <= hi && ev.Mono >= lo {
				keep[fault], keep[i] = true, true
			} else if fault >= 0 && ev.Mono < lo {
				keep[fault] = false
			}
		}
	}
	out := slices.Clone(own)
	for i, ev := range shared {
		if keep[i] {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Mono < out[j].Mono })
	return out
}

// merge adds the result of key k's Check to c's.
func (c *checker) merge(k string, r Result) {
	c.r.Terms = append(c.r.Terms, r.Terms...)
	for _, v := range r.Violations {
		v.Detail = k + ": " + v.Detail
		c.r.Violations = append(c.r.Violations, v)
	}
	c.r.Accepted += r.Accepted
	c.r.Refused += r.Refused
	for _, f := range r.Faults {
		i := slices.IndexFunc(c.r.Faults, func(g Fault) bool { return g.Start == f.Start })
		if i < 0 {
			continue
		}
		g := &c.r.Faults[i]
		g.Recovery = max(g.Recovery, f.Recovery)
		if f.NewLeader >= 0 && (g.NewLeader < 0 || f.NewLeader < g.NewLeader) {
			g.NewLeader = f.NewLeader
		}
	}
}

// inFault reports whether [from, to] meets a fault or the time within after
// of its heal.
func (c *checker) inFault(from, to int64, after time.Duration) bool {
	for _, f := range c.r.Faults {
		if f.Start <= to && from <= f.Heal+int64(after) {
			return true
		}
	}
	return false
}

// checkHandovers times, per key, the gap from a graceful stepdown or a kill
// of the holder to the next term. A graceful hand-over is timed only when
// no fault began, lasted or healed less than kp.Takeover earlier, between
// it and the next term (at most kp.Handover later): a fault that pauses or cuts the next owner on its way
// is the recovery check's business.
func (c *checker) checkHandovers(kp KeyParams, st *KeyStats) {
	terms := c.r.Terms
	for i, t := range terms {
		next := c.last
		if i+1 < len(terms) && terms[i+1].Key == t.Key {
			next = terms[i+1].Start
		}
		gap := time.Duration(next - t.End)
		switch {
		case kp.Handover > 0 && t.EndReason == "stepdown" && kp.Graceful != nil && kp.Graceful(t.Why) &&
			!c.inFault(t.End, min(next, t.End+int64(kp.Handover)), kp.Takeover):
			st.Graceful++
			st.WorstGraceful = max(st.WorstGraceful, gap)
			if gap > kp.Handover {
				c.report(ViolationSlowHandover, t.End, fmt.Sprintf("%s: %s (token %d) handed over at %s (%s); next term began %v later (bound %v)",
					t.Key, t.Proc, t.Token, ms(t.End), t.Why, gap, kp.Handover))
			}
		case kp.Takeover > 0 && t.EndReason == "kill":
			if f := c.faultAt(t.End); f < 0 || c.r.Faults[f].Kind != FaultKillLeader {
				continue
			}
			st.Takeovers++
			st.WorstTakeover = max(st.WorstTakeover, gap)
			if gap > kp.Takeover {
				c.report(ViolationSlowTakeover, t.End, fmt.Sprintf("%s: %s (token %d) killed at %s; next term began %v later (bound %v)",
					t.Key, t.Proc, t.Token, ms(t.End), gap, kp.Takeover))
			}
		}
	}
}

// checkRefusals checks that every process kp.MustRefuse names was refused
// and never elected.
func (c *checker) checkRefusals(kp KeyParams, st *KeyStats) {
	if kp.MustRefuse == nil {
		return
	}
	started := map[string]int64{}
	refused := map[string]bool{}
	for _, ev := range c.events {
		if !kp.MustRefuse(ev.Proc) {
			continue
		}
		switch ev.Kind {
		case KindStart:
			started[ev.Proc] = ev.Mono
		case KindRefused:
			refused[ev.Proc] = true
		case KindElected:
			c.report(ViolationLateWon, ev.Mono, fmt.Sprintf("%s: %s, which must be refused, was elected with token %d", ev.Key, ev.Proc, ev.Token))
		}
	}
	for proc, at := range started {
		if refused[proc] {
			st.Refused++
		} else {
			c.report(ViolationLateNotRefused, at, fmt.Sprintf("%s started at %s and was never refused", proc, ms(at)))
		}
	}
}
