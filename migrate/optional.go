package migrate

import (
	"context"
	"errors"

	"github.com/leaderkit/elector/backend"
)

var (
	_ backend.RateLimited    = (*Backend)(nil)
	_ backend.Forgetter      = (*Backend)(nil)
	_ backend.RequestCounter = (*Backend)(nil)
)

// Requests implements [backend.RequestCounter]: the requests the old and
// the new backend have sent, when both count them.
func (b *Backend) Requests() (int64, bool) {
	var n int64
	for _, s := range []backend.Backend{b.old, b.new} {
		c, ok := s.(backend.RequestCounter)
		if !ok {
			return 0, false
		}
		m, ok := c.Requests()
		if !ok {
			return 0, false
		}
		n += m
	}
	return n, true
}

// RequestRate implements [backend.RateLimited]: the lower of the old and
// the new backend's client rate limits, of those that set one; 0 when
// neither does.
func (b *Backend) RequestRate() float64 {
	rate := 0.0
	for _, s := range []backend.Backend{b.old, b.new} {
		if r, ok := s.(backend.RateLimited); ok {
			if v := r.RequestRate(); v > 0 && (rate == 0 || v < rate) {
				rate = v
			}
		}
	}
	return rate
}

// Forget implements [backend.Forgetter]: it forgets election in the old
// and in the new backend, each that implements it, and reports whether
// either removed anything. An error of one does not keep the other from
// forgetting.
func (b *Backend) Forget(ctx context.Context, election string) (bool, error) {
	var (
		removed bool
		errs    []error
	)
	for _, s := range []backend.Backend{b.old, b.new} {
		if f, ok := s.(backend.Forgetter); ok {
			ok, err := f.Forget(ctx, election)
			removed = removed || ok
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return removed, errors.Join(errs...)
}
