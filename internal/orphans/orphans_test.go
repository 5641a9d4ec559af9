package orphans

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestTakeReturnsTheLatestUntilExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Set[int]
		a, b := Key{"jobs", "alice"}, Key{"jobs", "bob"}
		s.Put(a, 1, time.Now().Add(time.Second))
		s.Put(a, 2, time.Now().Add(time.Second))
		s.Put(b, 3, time.Time{})
		if v, ok := s.Take(a); !ok || v != 2 {
			t.Errorf("Take(alice): got %d, %v; want 2, true: the later Put replaces the earlier", v, ok)
		}
		if v, ok := s.Take(a); ok {
			t.Errorf("Take(alice) again: got %d, true; want none: Take removes it", v)
		}
		s.Put(a, 4, time.Now().Add(time.Second))
		time.Sleep(time.Second)
		if v, ok := s.Take(a); ok {
			t.Errorf("Take(alice) at its expiry: got %d, true; want none", v)
		}
		if v, ok := s.Take(b); !ok || v != 3 {
			t.Errorf("Take(bob) without an expiry: got %d, %v; want 3, true", v, ok)
		}
	})
}

func TestPutDropsExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Set[int]
		s.Put(Key{"jobs", "alice"}, 1, time.Now().Add(time.Second))
		time.Sleep(time.Second)
		s.Put(Key{"jobs", "bob"}, 2, time.Now().Add(time.Second))
		if n := len(s.m); n != 1 {
			t.Errorf("after a Put past another orphan's expiry: %d orphans kept, want 1", n)
		}
	})
}

func TestCloseReturnsLiveOrphansAndKeepsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Set[int]
		s.Put(Key{"jobs", "alice"}, 1, time.Now().Add(time.Second))
		s.Put(Key{"jobs", "bob"}, 2, time.Now().Add(3*time.Second))
		s.Put(Key{"eu", "alice"}, 3, time.Time{})
		time.Sleep(2 * time.Second)
		got := s.Close()
		slices.Sort(got)
		if !slices.Equal(got, []int{2, 3}) {
			t.Errorf("Close: got %v, want [2 3]: the orphans not expired", got)
		}
		s.Put(Key{"jobs", "carol"}, 4, time.Time{})
		if v, ok := s.Take(Key{"jobs", "carol"}); ok {
			t.Errorf("Take after Close and Put: got %d, true; want none: a closed Set keeps nothing", v)
		}
		if got := s.Close(); len(got) != 0 {
			t.Errorf("Close again: got %v, want none", got)
		}
	})
}

func TestCleanKeepsWhatItCouldNotClean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Set[int]
		k := Key{"jobs", "alice"}
		s.Put(k, 1, time.Now().Add(2*time.Second))
		var seen []int
		s.Clean(k, func(v int) bool { seen = append(seen, v); return false })
		time.Sleep(time.Second) // the bubble's clock: a second before the orphan expires
		s.Clean(k, func(v int) bool { seen = append(seen, v); return false })
		time.Sleep(time.Second) // and to its expiry, kept across the failed cleans
		s.Clean(k, func(v int) bool { seen = append(seen, v); return true })
		if !slices.Equal(seen, []int{1, 1}) {
			t.Errorf("cleans called with %v, want [1 1]: a failed clean keeps the orphan until its own expiry", seen)
		}
		s.Put(k, 2, time.Time{})
		s.Clean(k, func(v int) bool { return true })
		if v, ok := s.Take(k); ok {
			t.Errorf("Take after a clean that succeeded: got %d, true; want none", v)
		}
	})
}
