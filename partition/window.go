package partition

import "time"

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
// timeout on a loaded machine (Redlock: "no reply within NodeTimeout" on
// most nodes), every failure was retried, and the retries and the cleanup
// of the failed rounds fed the queue — a congestion collapse in which
// renewals failed too. So the window works as TCP's congestion window: it
// halves when a campaign fails (once per round of campaigns: failures of
// campaigns started before the cut do not count again), grows by one with
// each campaign won until the first failure, and after it by one per
// window's worth of campaigns won; it stays between minWindow and
// maxCampaigns.
//
// Campaigns for partitions another member holds (a hand-over, a crash)
// wait in the driver until the holder lets go, one request each meanwhile;
// they are not bounded by the window, so that a joiner waits in every
// partition it is to take and takes each the moment it is released.
type window struct {
	size   int       // campaigns for free partitions allowed in flight
	active int       // campaigns for free partitions in flight
	cut    time.Time // when size was last halved
	acked  int       // campaigns won since size last grew, after a cut
}

func newWindow() window { return window{size: initWindow} }

// full reports whether no further campaign for a free partition may start.
func (w *window) full() bool { return w.active >= w.size }

// won widens the window after a campaign won.
func (w *window) won() {
	if !w.cut.IsZero() {
		if w.acked++; w.acked < w.size {
			return
		}
		w.acked = 0
	}
	w.size = min(maxCampaigns, w.size+1)
}

// failed narrows the window after a campaign started at began failed at
// now, unless it had started before the last cut: the failures of one
// round count once.
func (w *window) failed(began, now time.Time) {
	if began.Before(w.cut) {
		return
	}
	w.size = max(minWindow, w.size/2)
	w.cut, w.acked = now, 0
}

// congested reports whether the window was cut within d before now: the
// store is failing requests, so optional reads wait.
func (w *window) congested(now time.Time, d time.Duration) bool {
	return !w.cut.IsZero() && now.Before(w.cut.Add(d))
}
