package migratetest

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
)

// Hold is how long a replica leads before it resigns.
const Hold = 300 * time.Millisecond

// Replica is one replica process: an Elector over backends of its own,
// each of whose terms acts on a [Fence] for [Hold] and then resigns.
type Replica struct {
	// ID is the replica's identity.
	ID string
	// Elector is the replica's Elector.
	Elector *elector.Elector
	cancel  context.CancelFunc
	done    chan error // Run's result
	closes  []func() error
}

// StartReplica runs an Elector on b for election with identity id and the
// lease TTL ttl, logging to log (nil: nowhere), whose terms act on f. Stop
// calls closes after Run returned, in order.
func StartReplica(tb testing.TB, b backend.Backend, closes []func() error, election, id string, ttl time.Duration, log *slog.Logger, f *Fence) *Replica {
	tb.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Replica{ID: id, done: make(chan error, 1), closes: closes}
	e, err := elector.New(b, election, &elector.Options{
		Identity: id,
		TTL:      ttl,
		Logger:   log,
		OnElected: func(ctx context.Context, t elector.Term) {
			f.Start(t)
			defer f.End(t)
			timer := time.NewTimer(Hold)
			defer timer.Stop()
			select {
			case <-ctx.Done():
			case <-timer.C:
				_ = r.Elector.Resign(ctx)
			}
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	r.Elector = e
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- e.Run(ctx) }()
	return r
}

// Stop ends the replica's Run (which releases its lease) and closes its
// backends. It returns Run's error unless that is the cancellation.
func (r *Replica) Stop() error {
	r.cancel()
	err := <-r.done
	r.done <- err
	for _, c := range r.closes {
		_ = c()
	}
	r.closes = nil
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Returned reports whether Run has returned by itself within d, and its
// error.
func (r *Replica) Returned(d time.Duration) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-r.done:
		r.done <- err
		return true, err
	case <-t.C:
		return false, nil
	}
}
