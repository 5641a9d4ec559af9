package compare

import (
	"context"
	"strings"
	"time"

	"github.com/leaderkit/elector/backend"
)

// realAddrs is a backend reached through local proxies whose errors name
// the servers' real addresses instead of the proxies' ports, which mean
// nothing to the reader of a report.
type realAddrs struct {
	backend.Backend
	r *strings.Replacer // proxy address -> server address
}

func (b realAddrs) fix(err error) error {
	if err == nil {
		return nil
	}
	if msg := b.r.Replace(err.Error()); msg != err.Error() {
		return &addrError{msg: msg, err: err}
	}
	return err
}

func (b realAddrs) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, b.fix(err)
	}
	return realAddrLease{l, b}, nil
}

func (b realAddrs) Leader(ctx context.Context, election string) (backend.Holder, error) {
	h, err := b.Backend.Leader(ctx, election)
	return h, b.fix(err)
}

type realAddrLease struct {
	backend.Lease
	b realAddrs
}

func (l realAddrLease) Renew(ctx context.Context) error   { return l.b.fix(l.Lease.Renew(ctx)) }
func (l realAddrLease) Release(ctx context.Context) error { return l.b.fix(l.Lease.Release(ctx)) }

// DeadlineTrails forwards [backend.TrailingLease]: a ZooKeeper lease
// behind a proxy is renewed once per interval, as it is without one.
func (l realAddrLease) DeadlineTrails() bool {
	t, ok := l.Lease.(backend.TrailingLease)
	return ok && t.DeadlineTrails()
}

// RenewSince forwards [backend.SinceRenewer], and renews a lease that is
// none with Renew.
func (l realAddrLease) RenewSince(ctx context.Context, since time.Time) error {
	if r, ok := l.Lease.(backend.SinceRenewer); ok {
		return l.b.fix(r.RenewSince(ctx, since))
	}
	return l.Renew(ctx)
}

// addrError is err with the proxies' addresses in its message replaced; it
// matches what err matches (errors.Is and As see err).
type addrError struct {
	msg string
	err error
}

func (e *addrError) Error() string { return e.msg }
func (e *addrError) Unwrap() error { return e.err }
