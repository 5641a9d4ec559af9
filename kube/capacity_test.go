package kube

import (
	"math"
	"testing"
	"time"
)

// The renewal rate a held lease counts for follows its schedule: a renewal
// late behind a slow answer barely lowers it, so that the campaigns it
// admits do not take the client past its rate once the apiserver answers
// quickly again; a lease renewed on a longer schedule is counted at that
// schedule after a few renewals; a shorter one is followed at once.
func TestRenewRateFollowsTheSchedule(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	renewEvery := func(l *lease, n int, d time.Duration) {
		for range n {
			at = at.Add(d)
			l.renewed(at)
		}
	}
	l := &lease{secs: 3} // the portable layer renews every second
	renewEvery(l, 5, time.Second)
	if got := l.renewRate(); math.Abs(got-1) > 0.01 {
		t.Fatalf("renewed every 1s: %.2f renewals/s; want 1", got)
	}
	renewEvery(l, 1, 2*time.Second) // one late behind a slow answer
	if got := l.renewRate(); got < 0.85 {
		t.Errorf("after one renewal 2s late: %.2f renewals/s; want at least 0.85 (the schedule is still 1/s)", got)
	}
	renewEvery(l, 30, 1500*time.Millisecond) // a schedule of TTL/2
	if got := l.renewRate(); math.Abs(got-1/1.5) > 0.03 {
		t.Errorf("renewed every 1.5s: %.2f renewals/s; want about %.2f", got, 1/1.5)
	}
	renewEvery(l, 3, time.Second)
	if got := l.renewRate(); got < 0.9 {
		t.Errorf("renewed every 1s again: %.2f renewals/s after three; want at least 0.9", got)
	}
}
