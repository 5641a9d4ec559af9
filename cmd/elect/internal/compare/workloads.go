package compare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/partition"
)

// PhaseFloor is the name [Progress] gives the search for the TTL floor.
const PhaseFloor = "ttl-floor"

// phases lists what Run measures, in order.
func (r *runner) phases() []phase {
	o := r.o
	return []phase{
		{name: PhaseFloor, trials: 1, est: time.Second, trial: r.floor},
		{name: Acquire, trials: o.Trials, est: 20 * time.Millisecond, trial: r.acquire},
		{name: Throughput, trials: o.ThroughputTrials, est: o.Duration, trial: r.throughput, finish: r.perSecond(Throughput)},
		{name: Handover, trials: o.Trials, est: r.settle() + 20*time.Millisecond, trial: r.handover},
		{name: Renew, trials: o.RenewRounds, est: o.TTL / 3 / time.Duration(max(len(r.bs), 1)), pace: r.renewInterval(),
			setup: r.holdMany, trial: r.renewAll, finish: r.releaseMany},
		{name: Failover, trials: o.FailoverTrials, est: o.TTL + r.settle() + 100*time.Millisecond, trial: r.failover},
		{name: PhaseRebalance, trials: o.RebalanceTrials, est: 4 * min(o.TTL/3, partition.DefaultPollInterval),
			setup: r.startGroup, trial: r.rebalance, finish: r.stopGroup},
	}
}

// settle is how long a waiter is given to queue behind a holder before the
// holder lets go.
func (r *runner) settle() time.Duration { return min(r.o.TTL/4, 100*time.Millisecond) }

// floor finds the smallest of FloorTTLs the backend grants, on a client of
// its own (ZooKeeper makes one session per TTL).
func (r *runner) floor(ctx context.Context, b *bstate, _ int) {
	c, err := b.t.Open(ctx)
	if err != nil {
		b.rep.FloorError = err.Error()
		return
	}
	b.addClient(c)
	defer b.closeClient(c)
	name := r.name("ttl-floor")
	for _, ttl := range r.o.FloorTTLs {
		l, err := r.campaignTTL(ctx, b, c, name, ttl)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, backend.ErrInvalid):
			continue
		case err != nil:
			if b.rep.FloorError == "" {
				b.rep.FloorError = fmt.Sprintf("TTL %v: %v", ttl, err)
			}
			continue
		}
		b.rep.TTLFloor = ttl
		if err := r.release(ctx, b, l); err != nil && b.rep.FloorError == "" {
			b.rep.FloorError = fmt.Sprintf("release: %v", err)
		}
		return
	}
}

// acquire campaigns for an election nobody else wants and releases it.
func (r *runner) acquire(ctx context.Context, b *bstate, _ int) {
	res := b.result(Acquire)
	t0 := time.Now()
	l, err := r.campaign(ctx, b, b.a, r.name("acquire"))
	if err != nil {
		failed(ctx, res, fmt.Errorf("campaign: %w", err))
		return
	}
	if err := r.release(ctx, b, l); err != nil {
		failed(ctx, res, fmt.Errorf("release: %w", err))
		return
	}
	res.add(time.Since(t0))
}

// throughput runs Concurrency goroutines for Duration, each campaigning for
// and releasing an election of its own in a loop.
func (r *runner) throughput(ctx context.Context, b *bstate, _ int) {
	res := b.result(Throughput)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		ops  int
		stop = time.Now().Add(r.o.Duration)
	)
	t0 := time.Now()
	for k := range r.o.Concurrency {
		name := r.name("throughput/" + strconv.Itoa(k))
		wg.Go(func() {
			for time.Now().Before(stop) && ctx.Err() == nil {
				s := time.Now()
				l, err := r.campaign(ctx, b, b.a, name)
				if err == nil {
					if err = r.release(ctx, b, l); err != nil {
						err = fmt.Errorf("release: %w", err)
					}
				} else {
					err = fmt.Errorf("campaign: %w", err)
				}
				d := time.Since(s)
				mu.Lock()
				if err != nil {
					failed(ctx, res, err)
				} else {
					res.add(d)
					ops++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.mu.Lock()
	b.ops += ops
	b.opTime += time.Since(t0)
	b.mu.Unlock()
}

// perSecond returns a phase finish that turns the operations counted into
// the workload's PerSecond.
func (r *runner) perSecond(workload string) func(context.Context, *bstate) {
	return func(_ context.Context, b *bstate) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.opTime > 0 {
			b.result(workload).PerSecond = float64(b.ops) / b.opTime.Seconds()
		}
		b.ops, b.opTime = 0, 0
	}
}

// waiter is a Campaign running in a goroutine.
type waiter struct {
	done  chan struct{}
	lease backend.Lease
	err   error
	at    time.Time // when Campaign returned
}

// wait starts a campaign on c that waits up to opTimeout.
func (r *runner) wait(ctx context.Context, b *bstate, c *Client, election string) *waiter {
	w := &waiter{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.lease, w.err = r.campaign(ctx, b, c, election)
		w.at = time.Now()
	}()
	return w
}

// early reports whether the waiter returned within d: with a lease, that
// means two leaders at once.
func (w *waiter) early(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// finishWaiter waits for w after its holder went, releases its lease and
// returns when it was elected.
func (r *runner) finishWaiter(ctx context.Context, b *bstate, w *waiter) (time.Time, error) {
	<-w.done
	if w.err != nil {
		return time.Time{}, fmt.Errorf("waiter: %w", w.err)
	}
	if err := r.release(ctx, b, w.lease); err != nil {
		return w.at, fmt.Errorf("waiter's release: %w", err)
	}
	return w.at, nil
}

// handover: the holder (client a) releases while a candidate on client b
// waits; the time from the release to the waiter's election.
func (r *runner) handover(ctx context.Context, b *bstate, _ int) {
	res := b.result(Handover)
	name := r.name("handover")
	l, err := r.campaign(ctx, b, b.a, name)
	if err != nil {
		failed(ctx, res, fmt.Errorf("holder: %w", err))
		return
	}
	w := r.wait(ctx, b, b.b, name)
	if w.early(ctx, r.settle()) && w.err == nil {
		res.fail(errors.New("the waiter was elected while the holder held the lease"))
	}
	t0 := time.Now()
	if err := r.release(ctx, b, l); err != nil {
		failed(ctx, res, fmt.Errorf("holder's release: %w", err))
	}
	at, err := r.finishWaiter(ctx, b, w)
	if err != nil {
		failed(ctx, res, err)
		return
	}
	res.add(at.Sub(t0))
}
