package kube

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leaderkit/elector"
)

// The rolling upgrade's timing: client-go's usual ratios scaled down, and
// an elector TTL equal to client-go's LeaseDuration. A hand-over takes
// about 0.1 s; the TTL, which bounds it, leaves room for a loaded machine.
const (
	upgradeTTL         = 6 * time.Second
	upgradeRenewDL     = 4 * time.Second
	upgradeRetryPeriod = 500 * time.Millisecond
	upgradeReplicas    = 3
)

// leadership is one replica's time as leader: from when its callback
// started to when the context it was given ended.
type leadership struct {
	who        string
	start, end time.Time
}

// upgradeLog records the leaderships of a rolling upgrade.
type upgradeLog struct {
	mu      sync.Mutex
	got     []leadership
	open    map[string]time.Time
	changed chan struct{} // closed and replaced on every change
}

// note wakes those waiting for a change; r.mu is held.
func (r *upgradeLog) note() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// leaders returns how many replicas lead now, and a channel closed at the
// next change.
func (r *upgradeLog) leaders() (int, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.open), r.changed
}

// lead records who's leadership from now until ctx ends; it returns at once.
func (r *upgradeLog) lead(ctx context.Context, who string) {
	r.mu.Lock()
	r.open[who] = time.Now()
	r.note()
	r.mu.Unlock()
	<-ctx.Done()
	end := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, leadership{who: who, start: r.open[who], end: end})
	delete(r.open, who)
	r.note()
}

// The client-go → elector rolling upgrade: replicas running client-go's
// LeaderElector (ReleaseOnCancel) on a Lease are replaced one at a time by
// replicas running an Elector on the same Lease through this driver. At no
// time do two replicas lead, and the election is never without a leader
// for longer than the TTL.
func TestRollingUpgradeFromClientGo(t *testing.T) {
	t.Parallel() // a Lease of its own; a hand-over takes about 0.1 s of the 6 s allowed
	s := testServer(t)
	name := testName(t)
	rec := &upgradeLog{open: make(map[string]time.Time), changed: make(chan struct{})}

	type replica struct {
		who    string
		cancel context.CancelFunc
		done   chan struct{}
	}
	startClientGo := func(i int) replica {
		who := fmt.Sprintf("client-go-%d", i)
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Client:     s.client(t),
			LockConfig: resourcelock.ResourceLockConfig{Identity: who},
		}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: who, ReleaseOnCancel: true,
			LeaseDuration: upgradeTTL, RenewDeadline: upgradeRenewDL, RetryPeriod: upgradeRetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) { rec.lead(ctx, who) },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			t.Fatalf("NewLeaderElector: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := replica{who: who, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(r.done)
			le.Run(ctx)
		}()
		return r
	}
	startElector := func(i int) replica {
		who := fmt.Sprintf("elector-%d", i)
		b := testBackend(t, s, nil)
		e, err := elector.New(b, name, &elector.Options{
			Identity:  who,
			TTL:       upgradeTTL,
			OnElected: func(ctx context.Context, _ elector.Term) { rec.lead(ctx, who) },
			Logger:    slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatalf("elector.New: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := replica{who: who, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(r.done)
			_ = e.Run(ctx)
		}()
		return r
	}
	stop := func(r replica) {
		r.cancel()
		<-r.done
	}

	replicas := make([]replica, upgradeReplicas)
	for i := range replicas {
		replicas[i] = startClientGo(i)
	}
	defer func() {
		for _, r := range replicas {
			stop(r)
		}
	}()
	settle := func(step string) {
		t.Helper()
		timeout := time.After(upgradeTTL + 2*time.Second)
		for {
			n, changed := rec.leaders()
			if n == 1 {
				return
			}
			select {
			case <-changed:
			case <-timeout:
				t.Fatalf("%s: %d replicas lead, want 1", step, n)
			}
		}
	}
	settle("client-go replicas started")
	// Replace the leader first, then the others: every kind of hand-over
	// (client-go → elector, elector → elector) happens.
	order := []int{leaderIndex(rec, "client-go-"), 0, 1, 2}
	replaced := map[int]bool{}
	for _, i := range order {
		if i < 0 || replaced[i] {
			continue
		}
		replaced[i] = true
		stop(replicas[i])
		replicas[i] = startElector(i)
		settle(fmt.Sprintf("replica %d replaced", i))
		// Run mixed for two TTLs: the leader renews while the others
		// (client-go polling, elector watching) judge its Lease.
		<-time.After(2 * upgradeTTL)
	}
	// Finally the leader steps down once more: an elector hands over to an elector.
	if i := leaderIndex(rec, "elector-"); i >= 0 {
		stop(replicas[i])
		replicas[i] = startElector(i + upgradeReplicas)
		settle("the elector leader restarted")
	}
	for _, r := range replicas {
		stop(r)
	}
	replicas = nil

	rec.mu.Lock()
	got := slices.Clone(rec.got)
	rec.mu.Unlock()
	slices.SortFunc(got, func(a, b leadership) int { return a.start.Compare(b.start) })
	if len(got) < 2 {
		t.Fatalf("got %d leaderships, want several: %+v", len(got), got)
	}
	for i := 1; i < len(got); i++ {
		prev, cur := got[i-1], got[i]
		if cur.start.Before(prev.end) {
			t.Errorf("%s led from %v before %s stopped (%v later): two leaders", cur.who, cur.start.Format(time.StampMicro), prev.who, prev.end.Sub(cur.start))
		}
		if gap := cur.start.Sub(prev.end); gap > upgradeTTL {
			t.Errorf("no leader for %v between %s and %s, want at most the TTL %v", gap, prev.who, cur.who, upgradeTTL)
		}
		t.Logf("%s → %s: hand-over %v", prev.who, cur.who, cur.start.Sub(prev.end))
	}
}

// leaderIndex returns the replica number of the current leader whose name
// starts with prefix, or -1.
func leaderIndex(rec *upgradeLog, prefix string) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for who := range rec.open {
		var i int
		if _, err := fmt.Sscanf(who, prefix+"%d", &i); err == nil {
			return i % upgradeReplicas
		}
	}
	return -1
}
