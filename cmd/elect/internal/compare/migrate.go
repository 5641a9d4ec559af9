package compare

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/migrate"
)

// migrateCleanup removes what the two stores of the migrate URL u keep of
// elections: on a Redis store, every key of theirs (redisCleanup, markers
// included); on an old store of another kind, the markers phase new wrote
// (Unmark, only where the old store reports the marker as the holder).
func migrateCleanup(ctx context.Context, mux *backendurl.Mux, u *url.URL, elections []string) error {
	q := u.Query()
	var errs []error
	for _, side := range []string{"old", "new"} {
		raw := q.Get(side)
		if raw == "" {
			continue
		}
		inner, err := url.Parse(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: malformed URL", side)) // err would show the credentials
			continue
		}
		switch {
		case inner.Scheme == "redis" || inner.Scheme == "rediss":
			err = redisCleanup(ctx, inner, elections)
		case side == "old":
			err = unmarkAll(ctx, mux, raw, elections)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s store: %w", side, err))
		}
	}
	return errors.Join(errs...)
}

// unmarkAll removes the migrated marker of each of elections that carries
// one on the store at rawURL.
func unmarkAll(ctx context.Context, mux *backendurl.Mux, rawURL string, elections []string) error {
	b, closer, err := mux.Open(ctx, rawURL)
	if err != nil {
		return err
	}
	defer closer.Close()
	m, ok := b.(migrate.Marker)
	if !ok {
		return nil // it cannot carry a marker
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	parallel(len(elections), 16, func(i int) {
		h, err := b.Leader(ctx, elections[i])
		if errors.Is(err, backend.ErrNoLeader) || (err == nil && !migrate.IsMarker(h)) {
			return
		}
		if err == nil {
			_, err = m.Unmark(ctx, elections[i]) // a marker already gone is what cleanup wants
		}
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d elections: %w", len(errs), len(elections), errs[0])
	}
	return nil
}
