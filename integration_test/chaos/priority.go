package chaos

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// ModePriority: the candidates campaign with priorities (1 to 3, drawn
// anew for each process a slot starts; elector.Options.Priority) and a
// minimum term of one TTL. A leader does not resign on its own: every
// candidate leaves gracefully after 3-10 TTL (TTLs of at most 2 s) and its
// slot starts a new process with a new priority, so the preferred
// candidate changes often. Besides the default faults, the nemesis pauses
// or cuts off the preferred candidate ([FaultPausePreferred],
// [FaultCutPreferred]). [CheckPriority] adds the preference and flapping
// rules.
const ModePriority = "priority"

// Fault kinds of [ModePriority]: they hit the candidate of the highest
// priority that does not lead (any other one if none is higher), so that a
// leader yields to, or lower candidates defer to, a candidate that cannot
// win.
const (
	FaultPausePreferred = "pause-preferred" // SIGSTOP for 1.5-2.5 TTL, then SIGCONT
	FaultCutPreferred   = "cut-preferred"   // toxiproxy timeout on all its links, 1.5-2.5 TTL
)

// Violation kinds reported by [CheckPriority].
const (
	// ViolationLowerLeads: a leader kept leading, past its minimum term
	// and [PriorityParams.Budget], while a candidate of a higher priority
	// was live and reachable.
	ViolationLowerLeads = "lower-leads"
	// ViolationNeedlessYield: a leader yielded (its term ended with
	// elector.ErrPreempted) before its minimum term, or while no candidate
	// of a higher priority was live: leadership moved for nothing.
	ViolationNeedlessYield = "needless-yield"
)

// PriorityParams tune [CheckPriority].
type PriorityParams struct {
	// MinTerm is the candidates' elector.Options.MinTerm.
	MinTerm time.Duration
	// Budget is how long a lower leader may keep leading once it should
	// yield: from the later of its minimum term, the moment a higher
	// candidate became live and reachable, and the heal of a fault on the
	// store or on either of them.
	Budget time.Duration
	// Liveness is how long a candidate's entry may outlive its process in
	// the store (the TTL plus a margin): a yield is needless only if no
	// higher candidate was live within it.
	Liveness time.Duration
}

// PriorityStats are the preference figures of a priority campaign.
type PriorityStats struct {
	// Yields counts the terms that ended with a yield; Needless those of
	// them reported as [ViolationNeedlessYield].
	Yields   int `json:"yields"`
	Needless int `json:"needless_yields"`
	// Lags counts the terms in which a lower leader led past the moment it
	// should have yielded; WorstLag and MedianLag are how long it did.
	Lags      int           `json:"lags"`
	WorstLag  time.Duration `json:"worst_lag_ns"`
	MedianLag time.Duration `json:"median_lag_ns"`
	// Changes counts the leadership changes (a term won by another
	// process than the term before) and PriorityChanges the changes of the
	// highest priority among the live, reachable candidates.
	Changes         int `json:"leadership_changes"`
	PriorityChanges int `json:"priority_changes"`
}

// prioCand is one candidate process as [CheckPriority] sees it: its
// priority, its life, and the spells it could not act (paused, or its
// links faulted).
type prioCand struct {
	prio       int
	start, end int64
	down       [][2]int64
}

// up reports whether the candidate was live and reachable at t.
func (c *prioCand) up(t int64) bool {
	return t >= c.start && t < c.end && !within(c.down, t)
}

// CheckPriority checks the preference rules of a priority campaign on r,
// the [Check] of its history, adding its violations to r: no leader keeps
// leading past its minimum term and p.Budget while a candidate of a higher
// priority is live and reachable ([ViolationLowerLeads]); no leader yields
// before its minimum term or with no higher candidate live
// ([ViolationNeedlessYield]). A fault on the store suspends the first rule
// until it heals, as does a fault on the leader or the higher candidate.
func CheckPriority(events []Event, r *Result, p PriorityParams) PriorityStats {
	var st PriorityStats
	if len(events) == 0 {
		return st
	}
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b Event) int { return cmp.Compare(a.Mono, b.Mono) })
	c := &checker{events: events, last: events[len(events)-1].Mono, r: *r}
	cands, frozen := prioCands(events, r.Faults, c.last)
	var lags []time.Duration
	for i := range r.Terms {
		t := &r.Terms[i]
		if i > 0 && r.Terms[i-1].Proc != t.Proc {
			st.Changes++
		}
		l := cands[t.Proc]
		if l == nil {
			continue
		}
		// A yield is a step-down with ErrPreempted. A term that a pause or
		// a kill ended may report that reason later, on waking, but it
		// did not yield at its end.
		if t.EndReason == "stepdown" && strings.Contains(t.Why, "preempted") {
			st.Yields++
			if why := needless(t, l, cands, p); why != "" {
				st.Needless++
				c.report(ViolationNeedlessYield, t.End, fmt.Sprintf("%s (priority %d, token %d) yielded at %s %s", t.Proc, l.prio, t.Token, ms(t.End), why))
			}
		}
		if lag, since, h := lowerLag(t, l, cands, frozen, p.MinTerm); lag > 0 {
			lags = append(lags, lag)
			if lag > p.Budget {
				c.report(ViolationLowerLeads, since+int64(p.Budget), fmt.Sprintf("%s (priority %d, token %d) led until %s (%s); %s (priority %d) was live and reachable from %s: led %v past its yield (budget %v)",
					t.Proc, l.prio, t.Token, ms(t.End), t.EndReason, h, cands[h].prio, ms(since), lag.Round(time.Millisecond), p.Budget))
			}
		}
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		st.Lags, st.WorstLag, st.MedianLag = len(lags), lags[len(lags)-1], lags[len(lags)/2]
	}
	st.PriorityChanges = topChanges(cands, frozen, events[0].Mono, c.last)
	r.Violations = c.r.Violations
	return st
}

// prioCands rebuilds the candidates from their start events (Note
// "priority N"), ends (kill, exit, leave), pauses and the faults aimed at
// them; frozen are the spells of the faults on the store's nodes.
func prioCands(events []Event, faults []Fault, last int64) (map[string]*prioCand, [][2]int64) {
	cands := map[string]*prioCand{}
	paused := map[string]int64{}
	for _, ev := range events {
		c := cands[ev.Proc]
		switch {
		case ev.Kind == KindStart:
			if prio, ok := startPriority(ev); ok {
				cands[ev.Proc] = &prioCand{prio: prio, start: ev.Mono, end: last}
			}
		case c == nil:
		case ev.Kind == KindKill || ev.Kind == KindExit || ev.Kind == KindLeave:
			c.end = min(c.end, ev.Mono)
		case ev.Kind == KindPause:
			paused[ev.Proc] = ev.Mono
		case ev.Kind == KindResume:
			if at, ok := paused[ev.Proc]; ok {
				c.down = append(c.down, [2]int64{at, ev.Mono})
				delete(paused, ev.Proc)
			}
		}
	}
	for proc, at := range paused {
		cands[proc].down = append(cands[proc].down, [2]int64{at, last})
	}
	var frozen [][2]int64
	for _, f := range faults {
		if c := cands[f.Target]; c != nil {
			c.down = append(c.down, [2]int64{f.Start, f.Heal})
		} else {
			frozen = append(frozen, [2]int64{f.Start, f.Heal})
		}
	}
	return cands, frozen
}

// step is the resolution at which the preference rules are evaluated.
const step = int64(10 * time.Millisecond)

// lowerLag returns how long term t of candidate l led past the moment it
// should have yielded, when it should have, and the higher candidate it
// should have yielded to: the longest run of instants, from its minimum
// term on, at which a higher candidate was up, the store was not faulted
// and l itself was up, each run measured from its start.
func lowerLag(t *Term, l *prioCand, cands map[string]*prioCand, frozen [][2]int64, minTerm time.Duration) (time.Duration, int64, string) {
	var higher []string
	for name, h := range cands {
		if h.prio > l.prio && h.start < t.End && h.end > t.Start {
			higher = append(higher, name)
		}
	}
	if len(higher) == 0 {
		return 0, 0, ""
	}
	slices.Sort(higher)
	var (
		lag, since, worstSince int64
		who, worstWho          string
	)
	since = -1
	for at := t.Start + int64(minTerm); at < t.End; at += step {
		up := ""
		if l.up(at) && !within(frozen, at) {
			for _, name := range higher {
				if cands[name].up(at) {
					up = name
					break
				}
			}
		}
		switch {
		case up == "":
			since = -1
		case since < 0:
			since, who = at, up
		case at-since > lag:
			lag, worstSince, worstWho = at-since, since, who
		}
	}
	return time.Duration(lag), worstSince, worstWho
}

// needless says why yield t of candidate l moved leadership for nothing,
// or "" if it did not: it came before l's minimum term (less a step), or
// no candidate of a higher priority was live within p.Liveness of it.
func needless(t *Term, l *prioCand, cands map[string]*prioCand, p PriorityParams) string {
	if led := time.Duration(t.End - t.Start); led < p.MinTerm-time.Duration(step) {
		return fmt.Sprintf("after leading %v, before its minimum term %v", led.Round(time.Millisecond), p.MinTerm)
	}
	for _, h := range cands {
		if h.prio > l.prio && h.start <= t.End && h.end >= t.End-int64(p.Liveness) {
			return ""
		}
	}
	return fmt.Sprintf("with no candidate of a higher priority live within %v", p.Liveness)
}

// within reports whether t falls in one of spells.
func within(spells [][2]int64, t int64) bool {
	for _, s := range spells {
		if t >= s[0] && t < s[1] {
			return true
		}
	}
	return false
}

// topChanges counts the changes of the highest priority among the up
// candidates from first to last, in steps of 10 ms, outside store faults.
func topChanges(cands map[string]*prioCand, frozen [][2]int64, first, last int64) int {
	list := make([]*prioCand, 0, len(cands))
	for _, c := range cands {
		list = append(list, c)
	}
	slices.SortFunc(list, func(a, b *prioCand) int { return int(a.start - b.start) })
	changes, top := 0, -1
	for at := first; at < last; at += step {
		if within(frozen, at) {
			continue
		}
		best := 0
		for _, c := range list {
			if c.start > at {
				break
			}
			if c.prio > best && c.up(at) {
				best = c.prio
			}
		}
		if top >= 0 && best != top {
			changes++
		}
		top = best
	}
	return changes
}

// startPriority returns the priority a candidate's start event names
// (note "priority N"), and false for a candidate without one.
func startPriority(ev Event) (int, bool) {
	var prio int
	_, err := fmt.Sscanf(ev.Note, "priority %d", &prio)
	return prio, err == nil
}

// priorityOf returns the priority, 1 to 3, of generation gen of slot s in
// a campaign of seed.
func priorityOf(seed uint64, s, gen int) int {
	rng := rand.New(rand.NewPCG(seed, uint64(s)<<32|uint64(gen)))
	return 1 + rng.IntN(3)
}

// preferredTarget returns the running candidate of the highest priority
// that does not lead, or the leader if it runs alone.
func (c *campaign) preferredTarget() (*proc, error) {
	leader := c.leader()
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *proc
	for _, p := range c.running {
		if p == leader {
			continue
		}
		if best == nil || c.prio[p.name] > c.prio[best.name] || (c.prio[p.name] == c.prio[best.name] && p.name < best.name) {
			best = p
		}
	}
	if best == nil {
		best = leader
	}
	if best == nil {
		return nil, fmt.Errorf("no candidate process is running")
	}
	return best, nil
}
