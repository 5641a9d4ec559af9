package compare

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Bounds of the cleanup, whatever the TTL: releasing, closing and the
// targets' Cleanup take at most cleanupTimeout, the check as long again, and
// the wait for the leases of cut-off holders to lapse at most maxLapseWait.
const (
	cleanupTimeout = 10 * time.Second
	maxLapseWait   = 20 * time.Second
)

// forgetTimeout bounds the removal of the records a backend keeps of the
// run's elections (a driver with Forget, such as kube's), within the check's cleanupTimeout.
const forgetTimeout = cleanupTimeout * 3 / 5

// CleanupBound is the longest the cleanup of [Run] takes once the
// workloads have stopped, whatever the TTL; [Options.Abort] cuts it short.
const CleanupBound = 2*cleanupTimeout + maxLapseWait

// cleanup releases every lease still held, closes every client, runs the
// targets' Cleanup and checks that no election of the run has a leader,
// each backend over the elections campaigned for on it. It
// runs under r.stop, so that it also works after the run's ctx ended, and
// each step is bounded whatever the TTL.
func (r *runner) cleanup() {
	ctx, cancel := context.WithTimeout(r.stop, cleanupTimeout)
	defer cancel()
	r.note("releasing the leases still held, closing the clients")
	var wg sync.WaitGroup
	for _, b := range r.bs {
		wg.Go(func() { r.releaseAll(ctx, b) })
	}
	wg.Wait()
	r.bg.Wait()
	names := make([][]string, len(r.bs))
	some := false
	for i, b := range r.bs {
		if !b.unreachable {
			names[i] = b.names()
			some = some || len(names[i]) > 0
		}
	}
	if !some {
		return
	}
	r.note("removing what the stores keep of the run's elections")
	for i, b := range r.bs {
		if len(names[i]) == 0 {
			continue
		}
		wg.Go(func() {
			if b.t.Cleanup != nil {
				if err := b.t.Cleanup(ctx, names[i]); err != nil {
					b.rep.CleanupError = err.Error()
					return
				}
				b.cleaned = true
			}
		})
	}
	wg.Wait()
	r.awaitLapse()
	cctx, cancel := context.WithTimeout(r.stop, cleanupTimeout)
	defer cancel()
	for i, b := range r.bs {
		if len(names[i]) > 0 {
			wg.Go(func() { b.rep.Leftover = r.leftover(cctx, b, names[i]) })
		}
	}
	wg.Wait()
	if r.stop.Err() != nil {
		for _, b := range r.bs {
			b.aborted()
		}
	}
}

// note reports what the cleanup does now through Options.Progress.
func (r *runner) note(what string) {
	if r.o.Progress != nil {
		r.o.Progress(Progress{Phase: PhaseCleanup, Note: what, Elapsed: time.Since(r.rep.Started)})
	}
}

// releaseAll releases b's leases and closes its clients.
func (r *runner) releaseAll(ctx context.Context, b *bstate) {
	b.mu.Lock()
	held := make([]backend.Lease, 0, len(b.held))
	for l := range b.held {
		held = append(held, l)
	}
	b.mu.Unlock()
	parallel(len(held), 16, func(i int) { _ = r.releaseWithin(ctx, b, held[i]) })
	b.mu.Lock()
	clients := append([]*Client{b.a, b.b}, b.extra...)
	b.extra = nil
	b.mu.Unlock()
	for _, c := range clients {
		if c != nil {
			_ = c.Closer.Close()
		}
	}
}

// awaitLapse waits until the leases of cut-off holders that no waiter took
// over (the run was interrupted, or the waiter failed) and that lapse
// within maxLapseWait have lapsed. A lease that lapses later is not waited
// for: the check reports its election as still led.
func (r *runner) awaitLapse() {
	var (
		now    = time.Now()
		last   time.Time
		n, all int
	)
	for _, b := range r.bs {
		b.mu.Lock()
		for _, t := range b.cutOff {
			all++
			if t.Sub(now) <= maxLapseWait {
				n++
				last = later(last, t)
			}
		}
		b.mu.Unlock()
	}
	if n > 0 && time.Until(last) > 0 {
		r.note(fmt.Sprintf("waiting %v for the leases of %d of %d cut-off holders to lapse", time.Until(last).Round(100*time.Millisecond), n, all))
		sleep(r.stop, time.Until(last))
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// leftover returns the elections of names that still have a leader, on a
// client opened for the check. When the backend keeps a record of every
// election (a driver with Forget, such as kube's), it first removes the
// records of those no lease holds.
func (r *runner) leftover(ctx context.Context, b *bstate, names []string) []string {
	if ctx.Err() != nil {
		return nil
	}
	c, err := b.t.Open(ctx)
	if err != nil {
		if b.rep.CleanupError == "" {
			b.rep.CleanupError = "check: " + err.Error()
		}
		return nil
	}
	defer c.Closer.Close()
	for _, f := range forgetters(c.Backend) {
		// Leave the check time for the elections that could not be
		// forgotten.
		fctx, cancel := context.WithTimeout(ctx, forgetTimeout)
		if left, why := forgetAll(fctx, f, names); len(left) > 0 && b.rep.CleanupError == "" {
			b.rep.CleanupError = fmt.Sprintf("could not remove the records of %d elections %q: %v", len(left), left, why)
		}
		cancel()
	}
	var (
		mu  sync.Mutex
		out []string
	)
	parallel(len(names), 16, func(i int) {
		err := leaderErr(ctx, c.Backend, names[i])
		if errors.Is(err, backend.ErrNoLeader) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			out = append(out, names[i])
		} else if b.rep.CleanupError == "" {
			b.rep.CleanupError = "check: " + err.Error()
		}
	})
	sort.Strings(out)
	return out
}

// forgetAll forgets every election of names, trying again while it fails
// until ctx ends (a throttled or slow request succeeds later, and so does
// the election of a cut-off holder once its lease expired), and returns
// those it could not forget.
// (a refused delete says so).
func forgetAll(ctx context.Context, f forgetter, names []string) ([]string, error) {
	var (
		mu   sync.Mutex
		left []string
		why  = map[string]error{}
	)
	parallel(len(names), 16, func(i int) {
		var err error
		for attempt := 1; ctx.Err() == nil; attempt++ {
			if _, err = f.Forget(ctx, names[i]); err == nil || backend.IsPermanent(err) {
				break
			}
			sleep(ctx, retryPause(attempt))
		}
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			mu.Lock()
			left = append(left, names[i])
			why[names[i]] = err
			mu.Unlock()
		}
	})
	if len(left) == 0 {
		return nil, nil
	}
	sort.Strings(left)
	return left, why[left[0]]
}

// aborted records in b's report what an aborted cleanup may have left.
func (b *bstate) aborted() {
	b.mu.Lock()
	n := len(b.held) + len(b.cutOff)
	b.mu.Unlock()
	var left []string
	if n > 0 {
		left = append(left, fmt.Sprintf("%d leases still held, which lapse within the TTL", n))
	}
	if b.t.Cleanup != nil && !b.cleaned {
		left = append(left, "keys of its elections that never expire (fencing counters, migrated markers)")
	}
	msg := "aborted before the cleanup finished, nothing checked"
	if len(left) > 0 {
		msg += "; may remain: " + strings.Join(left, ", ")
	}
	b.rep.CleanupError = msg
}

// leaderErr asks for the leader of election, up to three times while the
// answer is a transient error (a busy store may not answer a Leader in
// time), and returns nil when there is one.
func leaderErr(ctx context.Context, b backend.Backend, election string) error {
	var err error
	for attempt := range 3 {
		if _, err = b.Leader(ctx, election); err == nil || errors.Is(err, backend.ErrNoLeader) || backend.IsPermanent(err) {
			return err
		}
		sleep(ctx, time.Duration(attempt+1)*100*time.Millisecond)
	}
	return err
}
