package migrate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/migrate"
)

// limited is a memory Backend whose client reports a rate limit, counts
// requests, and forgets elections, as a Kubernetes Lease client does.
type limited struct {
	*memory.Backend
	rate     float64
	requests int64
	forget   error
	forgot   []string
}

func (l *limited) RequestRate() float64    { return l.rate }
func (l *limited) Requests() (int64, bool) { return l.requests, true }
func (l *limited) Forget(_ context.Context, election string) (bool, error) {
	l.forgot = append(l.forgot, election)
	return l.forget == nil, l.forget
}

// A migrating Backend does not hide the abilities of the Backends it
// wraps: the lower rate limit, the sum of the requests when both count
// them, and Forget on each store that forgets.
func TestForwardsOptionalAbilities(t *testing.T) {
	old, new := &limited{Backend: memory.New(), rate: 50, requests: 7}, &limited{Backend: memory.New(), rate: 20, requests: 5}
	b, err := migrate.New(old, new, migrate.PhaseBoth, &migrate.Options{NewName: "kube"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.RequestRate(); got != 20 {
		t.Errorf("RequestRate: got %v; want 20, the lower of 50 and 20", got)
	}
	if n, ok := b.Requests(); n != 12 || !ok {
		t.Errorf("Requests: got %d, %v; want 12, true", n, ok)
	}
	new.forget = errors.New("held")
	if ok, err := b.Forget(context.Background(), "jobs"); !ok || err == nil || len(old.forgot) != 1 || len(new.forgot) != 1 {
		t.Errorf("Forget: got %v, %v, forgot %q and %q; want true, the new store's error, jobs forgotten on both", ok, err, old.forgot, new.forgot)
	}

	plain, err := migrate.New(old, memory.New(), migrate.PhaseBoth, &migrate.Options{NewName: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if got := plain.RequestRate(); got != 50 {
		t.Errorf("RequestRate over one limited store: got %v; want 50", got)
	}
	if _, ok := plain.Requests(); ok {
		t.Error("Requests over a store that does not count: got true; want false, the sum would be short")
	}
}
