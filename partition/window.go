package partition

import (
	"github.com/leaderkit/elector/internal/aimd"
)

// Bounds of the campaign window (see window).
const (
	minWindow  = 4
	initWindow = 8
)

// window bounds the campaigns a member has in flight for partitions that no
// other member is known to hold: those campaigns do not wait behind a
// holder, they all hit the store at once. A cold start places about n/members
// such partitions on every member at the same instant; started together,
// their requests queued behind each other past the driver's per-request
// timeout on a loaded machine (Redlock: "no reply within RequestTimeout" on
// most nodes), every failure was retried, and the retries and the cleanup
// of the failed rounds fed the queue — a congestion collapse in which
// renewals failed too. So the window is a congestion window
// (internal/aimd): it grows with each campaign won and halves when a
// campaign fails; it stays between minWindow and maxCampaigns.
//
// Campaigns for partitions another member holds (a hand-over, a crash)
// wait in the driver until the holder lets go, one request each meanwhile;
// they are not bounded by the window, so that a joiner waits in every
// partition it is to take and takes each the moment it is released.
type window struct {
	aimd.Window     // campaigns for free partitions allowed in flight
	active      int // campaigns for free partitions in flight
}

func newWindow() window { return window{Window: aimd.New(minWindow, initWindow, maxCampaigns)} }

// full reports whether no further campaign for a free partition may start.
func (w *window) full() bool { return w.active >= w.Size() }
