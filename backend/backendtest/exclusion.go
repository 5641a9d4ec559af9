package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Hand-overs the mutual-exclusion subtest aims for, and candidates.
const (
	exclusionTerms      = 300
	exclusionBackends   = 3
	exclusionPerBackend = 2 // two candidates on each Backend value
)

// interval is one lease as a candidate saw it, on the monotonic clock.
type interval struct {
	who      string
	token    uint64
	acquired time.Time // Campaign returned
	end      time.Time // min(Deadline, Release called)
}

// exclusionRace is the shared state of the candidates of one
// mutual-exclusion run.
type exclusionRace struct {
	e      *env
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	terms  atomic.Int64

	mu     sync.Mutex
	got    []interval
	failed error
}

// fail records the first error and stops every candidate.
func (r *exclusionRace) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed = err
	}
	r.cancel()
}

// candidate campaigns as id on b, term after term, until the race has
// enough terms, recording each lease's interval.
func (r *exclusionRace) candidate(b backend.Backend, id string) {
	defer r.cancel() // enough terms (or a failure): stop the waiters
	for n := 0; r.terms.Load() < exclusionTerms; n++ {
		l, err := b.Campaign(r.ctx, r.e.candidate(r.name, id))
		if err != nil {
			if r.ctx.Err() == nil {
				r.fail(fmt.Errorf("%s: Campaign: %w", id, err))
			}
			return
		}
		iv := interval{who: id, token: l.Token(), acquired: time.Now()}
		if n%3 == 1 {
			if err := l.Renew(r.ctx); err != nil && r.ctx.Err() == nil {
				r.fail(fmt.Errorf("%s: Renew of a fresh lease: %w", id, err))
			}
		}
		iv.end = time.Now()
		if d := l.Deadline(); d.Before(iv.end) {
			iv.end = d
		}
		r.mu.Lock()
		r.got = append(r.got, iv)
		r.mu.Unlock()
		r.terms.Add(1)
		if err := l.Release(r.e.ctx); err != nil && !errors.Is(err, backend.ErrLost) {
			r.fail(fmt.Errorf("%s: Release: %w", id, err))
			return
		}
	}
}

// testMutualExclusion races several candidates, two on each Backend value,
// through hundreds of hand-overs and checks that the lease intervals never
// overlap and that tokens increase in the order of election. (Hand-overs by
// expiry are checked by ExpiryTakeover, StaleLease and Isolated.)
func testMutualExclusion(e *env) {
	r := &exclusionRace{e: e, name: e.election("exclusion")}
	r.ctx, r.cancel = context.WithCancel(e.ctx)
	defer r.cancel()
	var wg sync.WaitGroup
	for i := range exclusionBackends {
		b := e.backend()
		for j := range exclusionPerBackend {
			wg.Go(func() { r.candidate(b, fmt.Sprintf("cand-%d.%d", i, j)) })
		}
	}
	wg.Wait()
	if r.failed != nil {
		e.Fatalf("got error %v, want none: candidates campaign, renew and release freely", r.failed)
	}
	if len(r.got) < exclusionTerms {
		e.Fatalf("got %d terms, want at least %d", len(r.got), exclusionTerms)
	}
	checkIntervals(e, r.got)
}

// checkIntervals checks that no lease began before the previous one ended
// and that tokens strictly increase in the order of election.
func checkIntervals(e *env, got []interval) {
	slices.SortFunc(got, func(x, y interval) int { return x.acquired.Compare(y.acquired) })
	var last interval
	for i, iv := range got {
		if i > 0 {
			if iv.acquired.Before(last.end) {
				e.Errorf("term %d: %s (token %d) elected %v before %s's lease (token %d) ended, want no overlap: one leader at a time",
					i, iv.who, iv.token, last.end.Sub(iv.acquired), last.who, last.token)
			}
			if prev := got[i-1]; iv.token <= prev.token {
				e.Errorf("term %d: %s got token %d after %s's %d, want a greater one: tokens strictly increase", i, iv.who, iv.token, prev.who, prev.token)
			}
		}
		if i == 0 || iv.end.After(last.end) {
			last = iv
		}
	}
	e.Logf("%d terms over %d candidates in %v", len(got), exclusionBackends*exclusionPerBackend, got[len(got)-1].end.Sub(got[0].acquired))
}
