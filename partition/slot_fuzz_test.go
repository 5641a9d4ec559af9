package partition

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzSlotIdentity: parseSlot reads any slot holder without panicking,
// into a non-empty identity and a weight in [1, MaxWeight] (the zero seat
// only for ""); a weight above 1 comes only from a well-formed suffix,
// which slotIdentity writes back as it was read; and every member a
// slotIdentity writes is read back as itself.
func FuzzSlotIdentity(f *testing.F) {
	for _, seed := range []string{
		"", "w", "w;weight=2", "w;weight=1", "w;weight=1000", "w;weight=1001",
		"w;weight=0", "w;weight=02", "w;weight=", "w;weight=-3", "w;weight=+3",
		"w;weight= 3", "w;weight=3 ", "w;weight=٣", ";weight=3", ";weight=",
		"a;weight=x;weight=3", "a;weight=3;weight=x", "w;weight=99999999999999999999",
		"\xff;weight=2", "w;weight=2\x00",
	} {
		f.Add(seed, 2)
	}
	f.Fuzz(func(t *testing.T, s string, w int) {
		got := parseSlot(s)
		switch {
		case s == "":
			if got != (seat{}) {
				t.Fatalf("parseSlot(%q) = %+v; want the zero seat: a free slot", s, got)
			}
		case got.identity == "" || got.weight < 1 || got.weight > MaxWeight:
			t.Fatalf("parseSlot(%q) = %+v; want a non-empty identity and a weight in [1, %d]", s, got, MaxWeight)
		case got.identity == s:
			if got.weight != 1 {
				t.Fatalf("parseSlot(%q) = %+v; want weight 1 for the whole string as identity", s, got)
			}
		default:
			// A suffix was read: it must be well formed, and be all
			// that was cut.
			suffix, ok := strings.CutPrefix(s, got.identity+weightMark)
			if !ok || suffix != strconv.Itoa(got.weight) {
				t.Fatalf("parseSlot(%q) = %+v; want the identity before the last %q and its weight", s, got, weightMark)
			}
			if got.weight > 1 && slotIdentity(got.identity, got.weight) != s {
				t.Fatalf("slotIdentity(parseSlot(%q)) = %q; want the slot holder back", s, slotIdentity(got.identity, got.weight))
			}
		}
		// Round trip: an identity New accepts, with any valid weight.
		if s == "" || strings.Contains(s, weightMark) {
			return
		}
		w = 1 + (w%MaxWeight+MaxWeight)%MaxWeight
		if back := parseSlot(slotIdentity(s, w)); back != (seat{s, w}) {
			t.Fatalf("parseSlot(slotIdentity(%q, %d)) = %+v; want the member back", s, w, back)
		}
	})
}
