package partition

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// weightMark separates a member's identity from its weight in the identity
// its membership slot is held under (see [Options.Weight]).
const weightMark = ";weight="

// seat is the holder of one membership slot, as read: the member's
// identity and weight, or the zero seat for a free slot.
type seat struct {
	identity string
	weight   int
}

// slotIdentity returns the identity a member of weight w holds its
// membership slot under: id itself for weight 1, so that groups and tools
// that know nothing of weights read it unchanged; id + ";weight=" + w
// above.
func slotIdentity(id string, w int) string {
	if w <= 1 {
		return id
	}
	return id + weightMark + strconv.Itoa(w)
}

// parseSlot reads the holder of a membership slot, as a backend reports
// it: "" is a free slot; id + ";weight=" + w, where id is not empty and w
// a weight in [1, MaxWeight] written in decimal without sign or leading
// zero, is id with weight w (the mark last found counts); anything else —
// any other suffix after the mark, whatever another program wrote — is the
// whole string as identity, with weight 1. It never fails: a slot's holder
// is whatever some process campaigned with.
func parseSlot(s string) seat {
	if s == "" {
		return seat{}
	}
	i := strings.LastIndex(s, weightMark)
	if i <= 0 {
		return seat{s, 1}
	}
	if w, ok := parseWeight(s[i+len(weightMark):]); ok {
		return seat{s[:i], w}
	}
	return seat{s, 1}
}

// parseWeight parses a weight in [1, MaxWeight] written in decimal
// digits, without sign, space or leading zero.
func parseWeight(s string) (int, bool) {
	if s == "" || len(s) > len(strconv.Itoa(MaxWeight)) || s[0] == '0' {
		return 0, false
	}
	w := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		w = w*10 + int(c-'0')
	}
	return w, w <= MaxWeight
}

// roster returns the identities of the held seats, sorted and without
// duplicates, and the weight of each: the largest of its seats', so that
// an identity holding two slots (a member restarted with another weight
// while its old slot lapses) weighs the same for every member.
func roster(seats []seat) ([]string, []int) {
	held := slices.DeleteFunc(slices.Clone(seats), func(s seat) bool { return s.identity == "" })
	slices.SortFunc(held, func(x, y seat) int {
		return cmp.Or(strings.Compare(x.identity, y.identity), cmp.Compare(y.weight, x.weight))
	})
	held = slices.CompactFunc(held, func(x, y seat) bool { return x.identity == y.identity })
	if len(held) == 0 {
		return nil, nil
	}
	ids, weights := make([]string, len(held)), make([]int, len(held))
	for i, s := range held {
		ids[i], weights[i] = s.identity, s.weight
	}
	return ids, weights
}

// weightOf returns the weight of member i as placement counts it:
// weights[i] within [1, MaxWeight], 1 when weights has no element i.
func weightOf(weights []int, i int) int {
	if i >= len(weights) {
		return 1
	}
	return min(max(weights[i], 1), MaxWeight)
}
