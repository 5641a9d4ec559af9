// Package aimd is the congestion window that bounds the requests a client
// has in flight against a store that slows down under load, as TCP's
// congestion window bounds a connection's segments: additive increase,
// multiplicative decrease. A Redlock Backend bounds its acquire rounds with
// one and a partition member its campaigns for free partitions: on a loaded
// host, thousands of requests started at once queued behind each other past
// their timeouts, each failure was retried, and the retries fed the queue —
// a congestion collapse in which the renewals of leases already held failed
// too.
//
// A Window grows by one with each request answered in time until the
// first failure; it halves when a request fails for want of a timely
// answer, once per window's worth (requests started before the cut do not
// cut it again); after a cut it grows by one per window's worth of timely
// answers. It stays within the bounds it was made with. A Window is not
// safe for concurrent use: its owner guards it.
package aimd

import "time"

// Window is a congestion window; see the package documentation.
type Window struct {
	min, max int
	size     int       // requests allowed in flight
	cut      time.Time // when size was last halved; zero if never
	acked    int       // timely answers since size last grew, after a cut
}

// New returns a Window of size init that stays within [min, max].
func New(min, init, max int) Window {
	return Window{min: min, max: max, size: init}
}

// Size returns the requests the window allows in flight.
func (w *Window) Size() int { return w.size }

// Cut returns when the window was last halved, or the zero time if never.
func (w *Window) Cut() time.Time { return w.cut }

// Grow records a request answered in time.
func (w *Window) Grow() {
	if !w.cut.IsZero() {
		if w.acked++; w.acked < w.size {
			return
		}
		w.acked = 0
	}
	w.size = min(w.max, w.size+1)
}

// Shrink records a request started at began that failed at now for want of
// a timely answer: the window halves, unless the request started before
// the last cut (the failures of one window's worth count once). It reports
// whether the window was cut.
func (w *Window) Shrink(began, now time.Time) bool {
	if began.Before(w.cut) {
		return false
	}
	w.size = max(w.min, w.size/2)
	w.cut, w.acked = now, 0
	return true
}

// Congested reports whether the window was cut within d before now.
func (w *Window) Congested(now time.Time, d time.Duration) bool {
	return !w.cut.IsZero() && now.Before(w.cut.Add(d))
}
