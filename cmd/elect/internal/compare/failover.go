package compare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// failover: a holder on a client of its own renews once, then its client is
// cut off from the store (Client.Crash); the time from that last renewal to
// the election of the candidate waiting on client b.
func (r *runner) failover(ctx context.Context, b *bstate, i int) {
	res := b.result(Failover)
	if b.t.OpenCrashable == nil {
		res.Skipped = "the target cannot cut a client off (no OpenCrashable)"
		return
	}
	h, err := b.t.OpenCrashable(ctx)
	if err != nil {
		failed(ctx, res, fmt.Errorf("open: %w", err))
		return
	}
	b.addClient(h)
	name := r.name("failover/" + strconv.Itoa(i))
	l, err := r.campaign(ctx, b, h, name)
	if err != nil {
		b.closeClient(h)
		failed(ctx, res, fmt.Errorf("holder: %w", err))
		return
	}
	w := r.wait(ctx, b, b.b, name)
	if w.early(ctx, r.settle()) && w.err == nil {
		res.fail(errors.New("the waiter was elected while the holder held the lease"))
	}
	t0 := time.Now()
	rctx, cancel := context.WithTimeout(ctx, r.opTimeout())
	err = l.Renew(rctx)
	cancel()
	if err != nil {
		failed(ctx, res, fmt.Errorf("holder's renew: %w", err))
	}
	h.Crash()
	b.forget(l) // it lapses at the store; nothing can release it now
	b.setCutOff(name, time.Now().Add(r.o.TTL*3/2))
	at, err := r.finishWaiter(ctx, b, w)
	if w.err == nil {
		b.setCutOff(name, time.Time{}) // the waiter won: the lease has lapsed
	}
	// Closing a cut-off client may wait for its own timeouts.
	r.bg.Go(func() { b.closeClient(h) })
	if err != nil {
		failed(ctx, res, err)
		return
	}
	if ctx.Err() == nil && err == nil {
		res.add(at.Sub(t0))
	}
}

// setCutOff records that election is held by a cut-off holder whose lease
// lapses at the store by lapse, or, with a zero lapse, that it no longer is.
func (b *bstate) setCutOff(election string, lapse time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if lapse.IsZero() {
		delete(b.cutOff, election)
		return
	}
	if b.cutOff == nil {
		b.cutOff = map[string]time.Time{}
	}
	b.cutOff[election] = lapse
}
