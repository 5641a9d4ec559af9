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

// testMutualExclusion races several candidates, two on each Backend value,
// through hundreds of hand-overs and checks that the lease intervals never
// overlap and that tokens increase in the order of election. (Hand-overs by
// expiry are checked by ExpiryTakeover, StaleLease and Isolated.)
func testMutualExclusion(e *env) {
	name := e.election("exclusion")
	var (
		mu     sync.Mutex
		got    []interval
		terms  atomic.Int64
		wg     sync.WaitGroup
		errMu  sync.Mutex
		failed error
	)
	fail := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if failed == nil {
			failed = err
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	for i := range exclusionBackends {
		b := e.backend()
		for j := range exclusionPerBackend {
			id := fmt.Sprintf("cand-%d.%d", i, j)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; terms.Load() < exclusionTerms; n++ {
					l, err := b.Campaign(ctx, e.candidate(name, id))
					if err != nil {
						if ctx.Err() == nil {
							fail(fmt.Errorf("%s: Campaign: %w", id, err))
							cancel()
						}
						return
					}
					iv := interval{who: id, token: l.Token(), acquired: time.Now()}
					if n%3 == 1 {
						if err := l.Renew(ctx); err != nil && ctx.Err() == nil {
							fail(fmt.Errorf("%s: Renew of a fresh lease: %w", id, err))
						}
					}
					iv.end = time.Now()
					if d := l.Deadline(); d.Before(iv.end) {
						iv.end = d
					}
					mu.Lock()
					got = append(got, iv)
					mu.Unlock()
					terms.Add(1)
					if err := l.Release(e.ctx); err != nil && !errors.Is(err, backend.ErrLost) {
						fail(fmt.Errorf("%s: Release: %w", id, err))
						cancel()
						return
					}
				}
				cancel() // enough terms: stop the waiters
			}()
		}
	}
	wg.Wait()
	if failed != nil {
		e.Fatalf("got error %v, want none: candidates campaign, renew and release freely", failed)
	}
	if len(got) < exclusionTerms {
		e.Fatalf("got %d terms, want at least %d", len(got), exclusionTerms)
	}
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
