package partition

import (
	"cmp"
	"hash/fnv"
	"slices"
)

// Quotas returns how many partitions of n each of members is placed: n/m
// rounded down, plus one for n mod m of them, chosen by a hash of group and
// identity, so that every member computes the same quotas from the same
// member list. The most loaded member holds ceil(n/m). members must be
// sorted and free of duplicates; the result is indexed like members.
func Quotas(group string, n int, members []string) []int {
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

// Place returns the placement every member of group computes from the same
// member list and the same reading of the partitions' holders: element p is
// the index in members of the member placed on partition p, or -1 when
// members is empty. members must be sorted and free of duplicates (as
// [Assigner.Members] and [Table] report them); owners[p] is the identity
// holding partition p now, "" for none (owners may be nil: nobody holds
// anything).
//
// It is sticky: each member keeps the partitions it holds, up to its quota
// (see [Quotas]), preferring those it ranks highest; every other partition
// — unowned, held by an identity that is not a member, or beyond its
// holder's quota — goes, in order, to the member that ranks it highest
// (rendezvous hashing) among those still below their quota. So the most
// loaded member holds ceil(n/m); a member joining takes its quota from the
// others and nothing moves between them; a member leaving hands its own
// partitions to the others and nothing else moves. With nobody holding
// anything (a cold start) it is rendezvous hashing with a load cap.
func Place(group string, n int, members []string, owners []string) []int {
	out := make([]int, n)
	for p := range out {
		out[p] = -1
	}
	m := len(members)
	if m == 0 {
		return out
	}
	quota := Quotas(group, n, members)
	seeds := seedsOf(group, members)
	score := func(i, p int) uint64 { return mix(seeds[i] ^ mix(uint64(p)+0x9e3779b97f4a7c15)) }
	held := make([][]int, m)
	for p, id := range owners {
		if p >= n || id == "" {
			continue
		}
		if i, ok := slices.BinarySearch(members, id); ok {
			held[i] = append(held[i], p)
		}
	}
	for i, ps := range held {
		slices.SortFunc(ps, func(x, y int) int { return cmp.Compare(score(i, y), score(i, x)) })
		for _, p := range ps[:min(len(ps), quota[i])] {
			out[p] = i
			quota[i]--
		}
	}
	for p := range out {
		if out[p] >= 0 {
			continue
		}
		best := -1
		for i := range members {
			if quota[i] > 0 && (best < 0 || score(i, p) > score(best, p)) {
				best = i
			}
		}
		out[p] = best
		quota[best]--
	}
	return out
}

// seedsOf returns each member's hash seed within group.
func seedsOf(group string, members []string) []uint64 {
	seeds := make([]uint64, len(members))
	for i, id := range members {
		h := fnv.New64a()
		h.Write([]byte(group))
		h.Write([]byte{0})
		h.Write([]byte(id))
		seeds[i] = h.Sum64()
	}
	return seeds
}

// mix is the splitmix64 finaliser: a bijection that spreads every input bit
// over every output bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
