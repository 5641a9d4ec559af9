package compare

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// trailingSince is a lease whose Deadline trails and that records the
// since it is renewed with, as a ZooKeeper lease would use it.
type trailingSince struct {
	backend.Lease
	got *time.Time
}

func (trailingSince) DeadlineTrails() bool { return true }

func (l trailingSince) RenewSince(_ context.Context, since time.Time) error {
	*l.got = since
	return nil
}

// The lease of a Backend behind proxies forwards the optional abilities of
// the lease it wraps: a ZooKeeper lease behind a proxy is renewed on the
// same schedule, and shares its session's request, as it is without one.
func TestRealAddrLeaseForwards(t *testing.T) {
	var got time.Time
	var l backend.Lease = realAddrLease{trailingSince{got: &got}, realAddrs{r: strings.NewReplacer()}}
	if tl, ok := l.(backend.TrailingLease); !ok || !tl.DeadlineTrails() {
		t.Errorf("the wrapped lease of a trailing lease does not report that its Deadline trails (TrailingLease %v)", ok)
	}
	r, ok := l.(backend.SinceRenewer)
	if !ok {
		t.Fatalf("the wrapped lease is not a backend.SinceRenewer")
	}
	since := time.Now().Add(-time.Millisecond)
	if err := r.RenewSince(t.Context(), since); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(since) {
		t.Errorf("the lease was renewed since %v; want %v", got, since)
	}
}
