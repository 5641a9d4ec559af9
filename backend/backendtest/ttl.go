package backendtest

import (
	"errors"
	"time"

	"github.com/leaderkit/elector/backend"
)

// testTTL checks that a lease lives as long as its candidate asked: the
// Deadline of a campaign with TTL t lies within [sent + t − (t/10 + 2 ms),
// returned + t rounded up to the driver's granularity], for the harness TTL
// and twice it on one Backend, and that TTLs below [backend.MinTTL] are
// refused with ErrInvalid.
func testTTL(e *env) {
	b := e.backend()
	gran := time.Millisecond
	if r, ok := e.h.(TTLRounder); ok {
		gran = r.TTLGranularity()
	}
	for i, ttl := range []time.Duration{e.ttl, 2 * e.ttl} {
		name := e.election("ttl-" + string(rune('a'+i)))
		sent := time.Now()
		l := e.acquire(b, backend.Candidate{Election: name, Identity: "alice", TTL: ttl})
		returned := time.Now()
		granted := (ttl + gran - 1) / gran * gran
		lo := sent.Add(ttl - ttl/10 - backend.DriftFloor)
		hi := returned.Add(granted)
		if d := l.Deadline(); d.Before(lo) || d.After(hi) {
			e.Errorf("TTL %v: got Deadline %v after the Campaign was sent, want between %v and %v (the TTL asked for, rounded up to %v, less at most 10%% drift): Candidate.TTL is the TTL the lease gets",
				ttl, d.Sub(sent), lo.Sub(sent), hi.Sub(sent), gran)
		}
		e.release(l)
	}
	for _, ttl := range []time.Duration{0, -time.Second, backend.MinTTL - time.Millisecond} {
		l, err := b.Campaign(e.ctx, backend.Candidate{Election: e.election("ttl-bad"), Identity: "alice", TTL: ttl})
		if !errors.Is(err, backend.ErrInvalid) {
			if l != nil {
				_ = l.Release(e.ctx)
			}
			e.Errorf("Campaign with TTL %v: got %v, want an error wrapping ErrInvalid: no driver grants a TTL below backend.MinTTL %v", ttl, err, backend.MinTTL)
		}
	}
}
