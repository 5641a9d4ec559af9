package partition

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/leaderkit/elector/backend"
)

// Table is who owns what in a group, as read from the backend by
// [ReadTable]: every partition's holder and every member's load. It is a
// snapshot taken by many reads, not one atomic read: during a hand-over a
// partition may show its old owner, its new one, or none.
type Table struct {
	// Group is the group's name.
	Group string `json:"group"`
	// Members lists the members holding a membership slot, by identity.
	Members []MemberLoad `json:"members"`
	// Partitions lists every partition in order; Owner is "" when the
	// partition has no holder.
	Partitions []Owner `json:"partitions"`
}

// Owner is one partition's holder in a [Table].
type Owner struct {
	// Partition is the partition's number.
	Partition int `json:"partition"`
	// Owner is the holder's identity, or "" when nobody holds it.
	Owner string `json:"owner"`
	// Token is the holder's fencing token, or 0.
	Token uint64 `json:"token"`
	// Placed is the member [PlaceWeighted] puts the partition on, computed
	// from Members, their weights and the holders read, or "" when there
	// are no members. It differs from Owner only while partitions move.
	Placed string `json:"placed"`
}

// MemberLoad is one member's line in a [Table].
type MemberLoad struct {
	// Identity is the member's identity.
	Identity string `json:"identity"`
	// Slot is the membership slot the member holds.
	Slot int `json:"slot"`
	// Weight is the member's weight as its slot carries it (see
	// [Options.Weight]): 1 for a member that sets none. Where one identity
	// holds two slots, placement counts the larger weight.
	Weight int `json:"weight"`
	// Owned is how many partitions the member holds.
	Owned int `json:"owned"`
	// Placed is how many partitions the placement puts on it: its quota
	// (see [QuotasWeighted]).
	Placed int `json:"placed"`
}

// ReadTable reads the holders of the n partitions of group and of its
// membership slots from b, with up to 8 reads in flight; each member's
// weight is read off its slot's holder (see [Options.Weight]), and the
// placement is computed with the weights. Partitions held by
// an identity that holds no slot (a member that just left, or crashed) are
// reported with that owner; it has no line in Members. An error is returned
// when any read fails for another reason than an election without holder.
func ReadTable(ctx context.Context, b backend.Backend, group string, n int) (*Table, error) {
	if err := validateNew(b, group, n); err != nil {
		return nil, err
	}
	t := &Table{Group: group, Partitions: make([]Owner, n)}
	slots, _, err := scanSlots(ctx, b, group, MembersLimit, nil, true)
	if err != nil {
		return nil, err
	}
	for k, s := range slots {
		if s.identity != "" {
			t.Members = append(t.Members, MemberLoad{Identity: s.identity, Slot: k, Weight: s.weight})
		}
	}
	ids, weights := roster(slots)
	holders, errs := readHolders(ctx, b, n, scanParallelism, func(p int) string { return Election(group, p) })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("partition: read partitions of %q: %w", group, err)
	}
	owners := make([]string, n)
	for p, h := range holders {
		owners[p] = h.Identity
	}
	placed := PlaceWeighted(group, n, ids, weights, owners)
	load := map[string]*MemberLoad{}
	for i := range t.Members {
		load[t.Members[i].Identity] = &t.Members[i]
	}
	for p, h := range holders {
		o := Owner{Partition: p, Owner: h.Identity, Token: h.Token}
		if placed[p] >= 0 {
			o.Placed = ids[placed[p]]
			load[o.Placed].Placed++
		}
		if m := load[o.Owner]; m != nil {
			m.Owned++
		}
		t.Partitions[p] = o
	}
	return t, nil
}

// readHolders reads the holders of the n elections name(0) … name(n-1):
// the zero Holder and a nil error for an election without holder. A
// [backend.BatchReader] reads them in one call (a Redlock node answers one
// request for all); otherwise they are read par at a time.
func readHolders(ctx context.Context, b backend.Backend, n, par int, name func(int) string) ([]backend.Holder, []error) {
	var hs []backend.Holder
	var errs []error
	if br, ok := b.(backend.BatchReader); ok {
		names := make([]string, n)
		for p := range n {
			names[p] = name(p)
		}
		hs, errs = br.Leaders(ctx, names)
	} else {
		hs, errs = make([]backend.Holder, n), make([]error, n)
		var wg sync.WaitGroup
		sem := make(chan struct{}, par)
		for p := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				hs[p], errs[p] = b.Leader(ctx, name(p))
			})
		}
		wg.Wait()
	}
	for p, err := range errs {
		if errors.Is(err, backend.ErrNoLeader) {
			hs[p], errs[p] = backend.Holder{}, nil
		}
	}
	return hs, errs
}

// spareSlots is how many free membership slots past the highest one taken
// are read at each poll: joiners take one of the lowest free slots, so they
// appear there.
const spareSlots = 16

// scanParallelism bounds the concurrent Leader reads of one scan.
const scanParallelism = 8

// scanSlots reads the membership slots of group in chunks of spareSlots
// until a whole chunk is free (joiners take one of the lowest free slots, so
// no member lies beyond), or maxMembers slots are read. The first read
// covers every chunk up to the one holding the highest slot taken in prev,
// and the chunk after it (two chunks when prev has none), so a scan of a
// settled group is one read (one request per node, on a
// [backend.BatchReader]); each read whose last chunk has a slot taken reads
// one more chunk. A member past a run of more than spareSlots free slots
// (members between them left) is seen when the run does not fill a whole
// chunk: reading only spareSlots past the highest slot taken missed a
// member 18 free slots further. It returns the holder of each slot
// read, identity and weight (see parseSlot), the zero seat for a free one.
// When strict, every failed read is an error; otherwise a slot whose read
// fails transiently keeps its value in prev (free beyond it), and only a
// permanent failure is an error; which slots were read is returned too.
func scanSlots(ctx context.Context, b backend.Backend, group string, maxMembers int, prev []seat, strict bool) ([]seat, []bool, error) {
	var out []seat
	var read []bool
	n := min((highestTaken(prev)/spareSlots+2)*spareSlots, maxMembers)
	for lo := 0; lo < maxMembers; lo, n = lo+n, min(spareSlots, maxMembers-lo-n) {
		ids, errs := readSlots(ctx, b, group, lo, n)
		for k, err := range errs {
			switch {
			case err == nil:
			case ctx.Err() != nil:
				return nil, nil, ctx.Err()
			case strict || backend.IsPermanent(err):
				return nil, nil, fmt.Errorf("partition: read members of %q: %w", group, err)
			case lo+k < len(prev):
				ids[k] = prev[lo+k]
			}
			read = append(read, err == nil)
		}
		out = append(out, ids...)
		if len(out)-(highestTaken(out)+1) >= spareSlots {
			break
		}
	}
	return out, read, nil
}

// highestTaken returns the index of the last slot in slots with a holder,
// or -1 when none has one.
func highestTaken(slots []seat) int {
	for k := len(slots) - 1; k >= 0; k-- {
		if slots[k].identity != "" {
			return k
		}
	}
	return -1
}

// readSlots reads the holders of slots [lo, lo+n) of group: identity and
// weight, or the zero seat with a nil error when a slot is free.
func readSlots(ctx context.Context, b backend.Backend, group string, lo, n int) ([]seat, []error) {
	hs, errs := readHolders(ctx, b, n, scanParallelism, func(k int) string { return memberElection(group, lo+k) })
	ids := make([]seat, n)
	for k, h := range hs {
		ids[k] = parseSlot(h.Identity)
	}
	return ids, errs
}
