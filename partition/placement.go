package partition

import (
	"hash/fnv"
	"math"
	"slices"
)

// Place returns the placement every member of group computes from the same
// member list: element p is the index in members of the member placed on
// partition p, or -1 when members is empty. members must be sorted and free
// of duplicates (as [Assigner.Members] and [Table] report them).
//
// It is rendezvous (highest-random-weight) hashing with a load cap: each
// partition, in order, goes to the member that ranks it highest among those
// holding fewer than ceil(loadFactor × n / len(members)) partitions. Without
// the cap a member leaving moves only its own partitions and a member joining
// takes about n/(m+1) from the others; the cap bounds the most loaded member
// at the price of a few extra moves when the cap itself changes.
func Place(group string, n int, members []string, loadFactor float64) []int {
	out := make([]int, n)
	m := len(members)
	if m == 0 {
		for p := range out {
			out[p] = -1
		}
		return out
	}
	limit := int(math.Ceil(loadFactor * float64(n) / float64(m)))
	seeds := make([]uint64, m)
	for i, id := range members {
		h := fnv.New64a()
		h.Write([]byte(group))
		h.Write([]byte{0})
		h.Write([]byte(id))
		seeds[i] = h.Sum64()
	}
	load := make([]int, m)
	for p := range out {
		best, bestScore := -1, uint64(0)
		for i := range members {
			if load[i] >= limit {
				continue
			}
			if s := mix(seeds[i] ^ mix(uint64(p)+0x9e3779b97f4a7c15)); best < 0 || s > bestScore {
				best, bestScore = i, s
			}
		}
		out[p] = best
		load[best]++
	}
	return out
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

// placedOn returns the partitions placed on identity by members' placement,
// as a set.
func placedOn(group string, n int, members []string, identity string, loadFactor float64) map[int]bool {
	i, ok := slices.BinarySearch(members, identity)
	set := make(map[int]bool)
	if !ok {
		return set
	}
	for p, at := range Place(group, n, members, loadFactor) {
		if at == i {
			set[p] = true
		}
	}
	return set
}
