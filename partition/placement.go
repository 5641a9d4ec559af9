package partition

import (
	"cmp"
	"hash/fnv"
	"math/bits"
	"slices"
)

// Quotas returns how many partitions of n each of members is placed: n/m
// rounded down, plus one for n mod m of them, chosen by a hash of group and
// identity, so that every member computes the same quotas from the same
// member list. The most loaded member holds ceil(n/m). members must be
// sorted and free of duplicates; the result is indexed like members. It is
// [QuotasWeighted] with every weight 1.
func Quotas(group string, n int, members []string) []int {
	return QuotasWeighted(group, n, members, nil)
}

// QuotasWeighted returns how many partitions of n each of members is placed
// when each member has a weight (its [Options.Weight]), weights[i] being
// that of members[i]: member i's exact share is n·w_i/W, where W is the
// sum of the weights. Each member gets its share rounded down; the
// partitions the rounding leaves over (fewer than the members) go one each
// to the members with the largest remainders, ties broken by a hash of
// group and identity — the order [Quotas] uses. A caller can rely on this:
//
//   - the quotas sum to n (for n ≥ 0 and at least one member);
//   - member i's quota is its share rounded down or up: at least
//     floor(n·w_i/W), at most ceil(n·w_i/W);
//   - every member computes the same quotas from the same members and
//     weights;
//   - with every weight equal — weights nil means every weight 1 — the
//     result is exactly [Quotas]'s.
//
// A weight below 1 counts as 1, one above [MaxWeight] as MaxWeight, and a
// missing one (weights shorter than members) as 1; extra weights are
// ignored. With n ≤ 0 or no members every quota is 0. members must be sorted
// and free of duplicates; the result is indexed like members.
//
// Largest remainders can give a member one partition more after another
// member joins (or one fewer after one leaves) when the others' weights
// differ: the rounding shifts. [PlaceWeighted] then moves a partition
// between two of the others.
func QuotasWeighted(group string, n int, members []string, weights []int) []int {
	m := len(members)
	q := make([]int, m)
	if m == 0 || n <= 0 {
		return q
	}
	w := make([]uint64, m)
	var total uint64
	for i := range w {
		w[i] = uint64(weightOf(weights, i))
		total += w[i]
	}
	rem := make([]uint64, m)
	left := n
	for i := range q {
		// n·w_i needs up to 73 bits when n is near the top of int.
		hi, lo := bits.Mul64(uint64(n), w[i])
		quo, r := bits.Div64(hi, lo, total) // quo ≤ n: no overflow
		q[i], rem[i] = int(quo), r
		left -= q[i]
	}
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	seeds := seedsOf(group, members)
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(rem[y], rem[x]), cmp.Compare(mix(seeds[y]), mix(seeds[x])), cmp.Compare(x, y))
	})
	// The remainders sum to left·W, each below W: left < the number of
	// members with a remainder, so nobody gets more than its share rounded
	// up.
	for _, i := range order[:left] {
		q[i]++
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
// anything (a cold start) it is rendezvous hashing with a load cap. It is
// [PlaceWeighted] with every weight 1.
func Place(group string, n int, members []string, owners []string) []int {
	return PlaceWeighted(group, n, members, nil, owners)
}

// PlaceWeighted is [Place] with weighted members: weights[i] is the weight
// of members[i] (its [Options.Weight]; nil means every weight 1, and
// weights count as in [QuotasWeighted]), and each member's load cap is its
// quota from QuotasWeighted rather than [Quotas]. A caller can rely on
// this:
//
//   - every partition is placed on exactly one member (on -1 when members
//     is empty), and member i is placed exactly its quota of them: at most
//     ceil(n·w_i/W), W being the sum of the weights;
//   - it is sticky as Place is: each member keeps what it holds up to its
//     quota, and placing a placement again moves nothing;
//   - a member joining takes its quota from the others, and a member leaving
//     hands over only its own partitions; nothing moves between the others
//     when their weights are all equal. When they differ, the rounding of
//     [QuotasWeighted] can raise one's quota by one as another member joins
//     (or lower it as one leaves): one partition then moves to (or from)
//     that member, from (or to) one whose quota went the other way;
//   - with every weight equal the result is exactly Place's.
//
// members must be sorted and free of duplicates; owners is as for Place.
func PlaceWeighted(group string, n int, members []string, weights []int, owners []string) []int {
	out := make([]int, max(n, 0))
	for p := range out {
		out[p] = -1
	}
	m := len(members)
	if m == 0 {
		return out
	}
	quota := QuotasWeighted(group, n, members, weights)
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
