package compare

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// cleanupTimeout bounds the cleanup beyond the wait for crashed holders'
// leases to lapse.
const cleanupTimeout = 10 * time.Second

// cleanup releases every lease still held, closes every client, runs the
// targets' Cleanup and checks that no election of the run has a leader. It
// runs with a fresh context, so that it also works after ctx ended.
func (r *runner) cleanup(parent context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), cleanupTimeout+2*r.o.TTL)
	defer cancel()
	var wg sync.WaitGroup
	for _, b := range r.bs {
		wg.Go(func() { r.releaseAll(ctx, b) })
	}
	wg.Wait()
	r.bg.Wait()
	names := r.names()
	sort.Strings(names)
	for _, b := range r.bs {
		wg.Go(func() {
			if b.t.Cleanup != nil && len(names) > 0 {
				if err := b.t.Cleanup(ctx, names); err != nil {
					b.rep.CleanupError = err.Error()
				}
			}
			b.rep.Leftover = r.leftover(ctx, b, names)
		})
	}
	wg.Wait()
}

// releaseAll releases b's leases and closes its clients.
func (r *runner) releaseAll(ctx context.Context, b *bstate) {
	b.mu.Lock()
	held := make([]backend.Lease, 0, len(b.held))
	for l := range b.held {
		held = append(held, l)
	}
	b.mu.Unlock()
	parallel(len(held), 16, func(i int) { _ = r.release(ctx, b, held[i]) })
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

// leftover returns the elections of names that still have a leader, on a
// client opened for the check. Leases of crashed holders lapse on their own:
// the check waits until the last crash is one TTL and a half old.
func (r *runner) leftover(ctx context.Context, b *bstate, names []string) []string {
	if len(names) == 0 {
		return nil
	}
	r.mu.Lock()
	lapsed := r.lastCrash.Add(r.o.TTL * 3 / 2)
	r.mu.Unlock()
	sleep(ctx, time.Until(lapsed))
	c, err := b.t.Open(ctx)
	if err != nil {
		if b.rep.CleanupError == "" {
			b.rep.CleanupError = "check: " + err.Error()
		}
		return nil
	}
	defer c.Closer.Close()
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
