package partition

import (
	"slices"
	"time"

	"github.com/leaderkit/elector/backend"
)

// cheapReading is the most partitions whose holders a member short of its
// quota reads every poll; larger groups read every 2 polls, 4 while
// campaigns wait (see planner.readDue).
const cheapReading = 256

// changeEvery divides PollInterval into the wait, after a change of the
// member list, before a member short of its quota reads every holder, in
// groups of at most cheapReading partitions (see planner.readDue).
const changeEvery = 4

// lapseEvery is, as a fraction of PollInterval, how often a member short
// of its quota reads the holder of a partition held by a departed member
// whose lease's end it cannot tell (ZooKeeper; an etcd lease within its
// last second).
const lapseEvery = 4

// lapseMargin is, as a fraction of PollInterval, how long after the end
// of a departed member's lease, as its TTL told, its partition is read
// again: the store's expiry lags (etcd revokes expired leases every
// 500 ms; it is then read every PollInterval/lapseEvery).
const lapseMargin = 20

// planner decides, from what the loop knows, where the partitions go and
// what this member does next: which partitions it campaigns for, hands
// over or awaits, and when it reads the holders again. It holds only the
// group's fixed facts; every decision is a function of its arguments. It
// reads no state of the loop, starts nothing and calls no backend: the
// loop gathers its input, calls it, and carries the decision out.
type planner struct {
	group string
	n     int
	me    string        // this member's identity
	poll  time.Duration // PollInterval
}

// planInput is what the loop knows when it places.
type planInput struct {
	members []string // the member list, sorted
	weights []int    // weights[i] is members[i]'s weight
	// owners is who owns what: the last reading, or the last placement;
	// nil for none.
	owners []string
	// parts holds the partitions with a lease here: true while owned,
	// false while handed over (ownership ended, lease not yet released).
	parts   map[int]bool
	placed  map[int]bool   // the previous placement on this member
	awaited map[int]string // what the previous placement awaited
	now     time.Time
}

// decision is the planner's answer to a planInput.
type decision struct {
	placed map[int]bool // the partitions placed on this member
	// owners is the belief: the member each partition is placed on.
	owners []string
	// elsewhere holds the partitions placed here that another identity
	// holds: their campaigns wait behind the holder, outside the window.
	elsewhere map[int]bool
	// awaited holds, for each partition placed here but held by another
	// identity, that identity (see planState.awaited).
	awaited map[int]string
	// campaign lists the partitions placed here without a lease here,
	// release those owned here but placed elsewhere; both sorted.
	campaign, release []int
	// checkAt is when to first read the awaited partitions' holders: set
	// when this placement awaits partitions and the previous one awaited
	// none, zero otherwise.
	checkAt time.Time
}

// isMember reports whether id is in members (sorted).
func isMember(members []string, id string) bool {
	_, ok := slices.BinarySearch(members, id)
	return ok
}

// standing returns this member's place in members, whether it is in them,
// how many partitions it owns of parts, and its quota.
func (pl planner) standing(members []string, weights []int, parts map[int]bool) (i int, in bool, held, quota int) {
	i, in = slices.BinarySearch(members, pl.me)
	for _, owned := range parts {
		if owned {
			held++
		}
	}
	if in {
		quota = QuotasWeighted(pl.group, pl.n, members, weights)[i]
	}
	return i, in, held, quota
}

// place computes the placement from who owns what as this member knows it
// (see owners), and what each partition placed here awaits. This member
// must be in in.members.
func (pl planner) place(in planInput) decision {
	i, _, held, quota := pl.standing(in.members, in.weights, in.parts)
	owners, claimed := pl.owners(in, held, quota)
	at := PlaceWeighted(pl.group, pl.n, in.members, in.weights, owners)
	d := decision{
		placed:    make(map[int]bool),
		owners:    make([]string, pl.n),
		elsewhere: make(map[int]bool),
		awaited:   make(map[int]string),
	}
	for p, k := range at {
		d.owners[p] = in.members[k]
		if k != i {
			continue
		}
		d.placed[p] = true
		if owners[p] != "" && owners[p] != pl.me {
			d.elsewhere[p] = true
		}
		if _, ok := in.parts[p]; ok {
			continue
		}
		d.campaign = append(d.campaign, p)
		// Awaited from the same holder until won: a later placement,
		// from the belief rather than a reading, no longer names a
		// departed holder.
		switch id, ok := in.awaited[p]; {
		case ok:
			d.awaited[p] = id
		case claimed[p] != "":
			d.awaited[p] = claimed[p]
		case d.elsewhere[p]:
			d.awaited[p] = owners[p]
		}
	}
	for p, owned := range in.parts {
		if owned && !d.placed[p] {
			d.release = append(d.release, p)
		}
	}
	slices.Sort(d.release)
	if len(in.awaited) == 0 && len(d.awaited) > 0 {
		d.checkAt = in.now.Add(pl.poll)
	}
	return d
}

// owners returns who owns what as this member knows it: the last reading
// or placement (none before the first), corrected by what this member knows
// for sure — the partitions it holds, and those it no longer does (ended,
// or being handed over) as free. While it holds less than quota, the
// partitions it still wants (placed here, no lease here) that are free or
// held by a non-member count as its own too, as long as they and the
// partitions it holds fit in quota: a reading taken while campaigns are
// under way does not show them, and placing them anew could hand them to
// another member that the previous placement gave others. It also returns
// the departed holder of each partition so counted.
func (pl planner) owners(in planInput, held, quota int) ([]string, map[int]string) {
	owners := slices.Clone(in.owners)
	if owners == nil {
		owners = make([]string, pl.n)
	}
	for p, id := range owners {
		if id == pl.me {
			owners[p] = ""
		}
	}
	for p, owned := range in.parts {
		if owned {
			owners[p] = pl.me
		}
	}
	var wanted []int
	for p := range in.placed {
		if _, ok := in.parts[p]; !ok && !isMember(in.members, owners[p]) {
			wanted = append(wanted, p)
		}
	}
	claimed := make(map[int]string)
	if held+len(wanted) <= quota {
		for _, p := range wanted {
			if owners[p] != "" {
				claimed[p] = owners[p]
			}
			owners[p] = pl.me
		}
	}
	return owners, claimed
}

// keep returns the placement of a member that places nothing new: while
// out of the member list (its slot's lease lapsed; it rejoins) it keeps
// what it owns, safe under its own leases, and takes nothing new; when
// keep is false (not settled, or stopping) it keeps nothing. The others
// wait in its partitions' campaigns meanwhile, and give up once it is back.
func (pl planner) keep(parts map[int]bool, keep bool) map[int]bool {
	placed := map[int]bool{}
	if keep {
		for p, owned := range parts {
			if owned {
				placed[p] = true
			}
		}
	}
	return placed
}

// readSchedule is what decides when a member short of its quota next
// reads every holder.
type readSchedule struct {
	now       time.Time
	current   bool      // the last reading started under the member list applied now
	readAt    time.Time // when the last reading started; zero for none
	changedAt time.Time // when the member list last changed
	waiting   bool      // campaigns are in flight
	cut       time.Time // when campaigns last failed (the window was cut); zero for never
}

// readDue returns when a member short of its quota next reads every
// holder: at s.now or before, now.
func (pl planner) readDue(s readSchedule) time.Time {
	// Each reading is n Leader reads: on a cold start every member is
	// short, and reading each poll overloaded a Redlock quorum (1,024
	// partitions over 10 members, 100,000 Redis requests a second). A
	// group of at most cheapReading partitions reads each poll: a member
	// short because the beliefs left a partition to nobody learns it
	// within a poll rather than four (hand-overs 0.1-0.4 s over the 2 s
	// bound after a ZooKeeper kill-majority in the partition chaos).
	every := pl.poll
	if pl.n > cheapReading {
		every *= 2
		if s.waiting {
			every *= 2
		}
	}
	if s.current && !s.readAt.IsZero() && s.now.Before(s.readAt.Add(every)) {
		return s.readAt.Add(every)
	}
	// After a change of the member list, the hand-overs placed from the
	// belief complete within about a poll (the others notice the change,
	// the leaver has released already); only a member still short then
	// reads. Every member reading n holders at once as it applied a leave
	// would put members × n reads on the store at once, and the reading
	// that matters (the one finding a partition the beliefs placed on
	// nobody) would come last. A group of at most cheapReading partitions
	// waits a quarter of a poll: a reading there is cheap, and a member
	// made short by a leave learns within it of a partition the others'
	// readings placed on the leaver, rather than a poll later, past the
	// TTL + 1 s bound of a take-over.
	settle := pl.poll
	if pl.n <= cheapReading {
		settle /= changeEvery
	}
	if due := s.changedAt.Add(settle); !s.current && s.now.Before(due) {
		return due
	}
	// Campaigns failing (the window was cut) mean a loaded store: a
	// reading of n holders would add to the load that fails them. Read
	// once a round of campaigns has gone by without a failure.
	if s.current && !s.cut.IsZero() && s.now.Before(s.cut.Add(every)) {
		return s.cut.Add(every)
	}
	return s.now
}

// lapsing returns, from a reading of owners (with their leases' ttls)
// started at readAt, when to read again each partition held by a departed
// member (see planState.lapsing); nil for none.
func (pl planner) lapsing(members, owners []string, ttls []time.Duration, readAt time.Time) map[int]time.Time {
	var at map[int]time.Time
	for p, id := range owners {
		if id == "" || id == pl.me || isMember(members, id) {
			continue
		}
		if at == nil {
			at = make(map[int]time.Time)
		}
		at[p] = readAt.Add(pl.lapseAfter(ttls[p]))
	}
	return at
}

// lapseAfter returns how long after reading a departed member's partition
// with a lease of ttl left (0: unknown) to read it again.
func (pl planner) lapseAfter(ttl time.Duration) time.Duration {
	return max(ttl+pl.poll/lapseMargin, pl.poll/lapseEvery)
}

// verdict is what a reading of the awaited partitions' holders tells.
type verdict struct {
	// seen is the token of each awaited partition's expected holder, as
	// first read.
	seen map[int]uint64
	// wrong is a partition whose holder contradicts the belief: held by
	// another member than the one awaited, or won anew by that one; -1
	// for none. The member then reads every holder at once and awaits
	// this partition from the reading's holder.
	wrong  int
	holder string // wrong's holder
	// again: wrong's expected holder won it anew (rather than another
	// member holding it).
	again bool
}

// judge holds a reading of some awaited partitions' holders (holders[i]
// of parts[i], unless errs[i] is set) against the belief: awaited, and the
// tokens seen so far. A partition held by another member than awaited (it
// beat this member to a departed member's partition), or newly won by the
// awaited member (it took the partition rather than hand it over), means
// the belief was wrong, and what the placement left to that member may be
// placed on nobody. It stops at the first such partition.
func (pl planner) judge(members []string, awaited map[int]string, seen map[int]uint64, parts []int, holders []backend.Holder, errs []error) verdict {
	v := verdict{seen: make(map[int]uint64, len(seen)), wrong: -1}
	for p, tok := range seen {
		v.seen[p] = tok
	}
	for i, p := range parts {
		h := holders[i]
		want, ok := awaited[p]
		if !ok || errs[i] != nil || h.Identity == pl.me {
			continue
		}
		if h.Identity == "" || !isMember(members, h.Identity) {
			if isMember(members, want) {
				v.seen[p] = 0 // the member expected to hand it over does not hold it
			}
			continue // free, or still a departed member's
		}
		tok, known := v.seen[p]
		switch {
		case h.Identity != want:
		case known && tok != h.Token:
			v.again = true
		default:
			v.seen[p] = h.Token
			continue
		}
		v.wrong, v.holder = p, h.Identity
		return v
	}
	return v
}
