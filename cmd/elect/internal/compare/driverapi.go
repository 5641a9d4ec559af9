package compare

import (
	"context"

	"github.com/leaderkit/elector/backend"
)

// What compare asks of a driver beyond the contract, on the driver's own
// exported API (the kube driver has all three), found with backend.As and
// backend.Walk so that a wrapper such as a migrating Backend does not
// hide them.

// forgetter is a driver whose store keeps a record of an election after
// its last lease, which nothing expires (a Kubernetes Lease object).
// Forget removes it, provided no lease holds the election.
type forgetter interface {
	Forget(ctx context.Context, election string) (bool, error)
}

// rateLimited is a driver whose client limits the rate of its requests:
// RequestRate is the sustained rate, 0 when it sets none.
type rateLimited interface {
	RequestRate() float64
}

// requestCounter is a driver that counts the requests it sends to its
// store, where no proxy can read the protocol (HTTP/2 over TLS).
type requestCounter interface {
	Requests() (int64, bool)
}

// forgetters returns every driver b is or wraps that forgets elections.
func forgetters(b backend.Backend) []forgetter {
	var out []forgetter
	backend.Walk(b, func(b backend.Backend) bool {
		if f, ok := b.(forgetter); ok {
			out = append(out, f)
		}
		return true
	})
	return out
}

// requestRate is the lowest rate limit of the drivers b is or wraps that
// set one, 0 when none does.
func requestRate(b backend.Backend) float64 {
	rate := 0.0
	backend.Walk(b, func(b backend.Backend) bool {
		if r, ok := b.(rateLimited); ok {
			if v := r.RequestRate(); v > 0 && (rate == 0 || v < rate) {
				rate = v
			}
		}
		return true
	})
	return rate
}

// requestCount returns what counts the requests b sends: the sum over
// the drivers b is or wraps, when every driver among them that talks to a
// store counts; nil otherwise. A wrapper counts nothing itself: only the
// drivers it wraps send requests.
func requestCount(b backend.Backend) func() int64 {
	var counters []requestCounter
	all := true
	backend.Walk(b, func(b backend.Backend) bool {
		if _, wraps := b.(backend.Unwrapper); wraps {
			return true
		}
		rc, ok := b.(requestCounter)
		if !ok {
			all = false
			return false
		}
		if _, counts := rc.Requests(); !counts {
			all = false
			return false
		}
		counters = append(counters, rc)
		return true
	})
	if !all || len(counters) == 0 {
		return nil
	}
	return func() int64 {
		var n int64
		for _, rc := range counters {
			m, _ := rc.Requests()
			n += m
		}
		return n
	}
}
