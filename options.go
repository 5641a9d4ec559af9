package elector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
)

// Defaults and limits of [Options].
const (
	// DefaultTTL is the lease TTL when [Options.TTL] is zero. It matches
	// client-go's recommended LeaseDuration.
	DefaultTTL = 15 * time.Second
	// MinTTL is the shortest TTL [New] accepts. Drivers may require more
	// (etcd leases are whole seconds).
	MinTTL = 100 * time.Millisecond
	// MaxTTL is the longest TTL [New] accepts: a crashed leader blocks its
	// election for up to a TTL, and a TTL above an hour is almost always a
	// unit mistake (876000h for 876000ms) rather than a wish.
	MaxTTL = time.Hour
)

// Options configure an [Elector]. A nil *Options means all defaults. Every
// field's zero value selects its documented default.
type Options struct {
	// Identity names this candidate to others: backends report it as the
	// leader's identity. Default: "<hostname>-<pid>-<6 random hex digits>".
	// Identities need not be unique; terms are told apart by their tokens.
	Identity string

	// TTL is how long a lease lives at the backend without a renewal: after
	// a leader crashes, another candidate is elected within about TTL.
	// Default [DefaultTTL] (15 s); at least [MinTTL], at most [MaxTTL].
	TTL time.Duration

	// RenewInterval is the time between renewals while leading: a renewal
	// is due RenewInterval after the request that proved the lease's
	// current deadline, so the elections whose leases a driver renews with
	// one request stay in step, and a deadline the driver moved on its own
	// (a ZooKeeper session's pings) postpones the renewal. A failed
	// renewal is retried, with backoff, until the lease's deadline minus
	// SafetyMargin. Default TTL/3; it must be below TTL - SafetyMargin.
	RenewInterval time.Duration

	// SafetyMargin is how long before the lease's local deadline the leader
	// steps down when no renewal has succeeded: the time OnElected has to
	// notice its ctx is done and stop acting, before any other candidate can
	// be elected. The deadline itself already allows for the request's
	// round trip and clock drift. Default TTL/5 (3 s at the default TTL);
	// it must be below TTL/2.
	SafetyMargin time.Duration

	// Priority makes this candidate preferred over the candidates of a
	// lower priority (higher wins): a leader of a lower priority yields to
	// it, and lower candidates stand aside so that it is elected next. See
	// the package documentation's "Preferred leaders" section. The default
	// 0 takes no part in preferences: the elector campaigns, leads and
	// never yields exactly as without this field. A priority must not be
	// negative, and the backend must keep a registry of candidates (be a
	// [backend.Registry]); [New] refuses one otherwise.
	Priority int

	// MinTerm is how long this elector leads, at least, before it yields
	// to a candidate of a higher priority, so that leadership does not move
	// for every candidate that comes and goes. Default 0: yield at once.
	// It must not be negative, and applies only with a Priority.
	MinTerm time.Duration

	// OnElected is called in a goroutine of its own when this elector wins a
	// term. Its ctx is cancelled the moment the term ends, for whatever
	// reason; OnElected must then stop acting as leader and return promptly.
	// If it returns before the term ends, the elector keeps leading
	// (renewing the lease) until the term ends; call [Elector.Resign] to
	// hand over instead. Nil means nothing runs while leading. It is not
	// called (nor is OnRevoked) when the lease reaches its step-down point
	// before OnElected can start, as when the process was stopped between
	// winning and the call.
	OnElected func(ctx context.Context, t Term)

	// OnRevoked is called exactly once after each OnElected, once OnElected
	// has returned and the lease has been released, with the reason the term
	// ended: an error wrapping [ErrLeaseLost] (with its cause; also
	// [backend.ErrClosed] when the Backend was closed under the term), wrapping
	// [ErrResigned] or [ErrPreempted], or the ctx error of [Elector.Run] (context.Canceled)
	// when Run stops. It runs on Run's goroutine, before the next campaign.
	// Nil means no call.
	OnRevoked func(t Term, reason error)

	// OnLeaderChange, if set, is called with the holder of the election each
	// time it changes, whoever holds it, and with the zero [Holder]
	// when there is none. Run calls it sequentially from one goroutine while
	// it runs, through the backend's [backend.Watcher] when it has one and by
	// polling [Elector.Leader] every RenewInterval otherwise.
	OnLeaderChange func(h Holder)

	// Observer, if set, is called with each [Event]: campaign attempts,
	// terms starting and ending, renewals and releases, with their latency
	// and outcome. It is the hook for metrics (see package
	// github.com/leaderkit/elector/promelector for Prometheus). Calls come
	// one at a time, in order, from Run's goroutine and, for renewals, from
	// the goroutine that ran the renewal; they must return quickly.
	Observer func(Event)

	// Logger receives structured logs: Info for terms starting and ending,
	// Warn for failed renewals and for campaign errors (the first failure of
	// a run of failed attempts, then one per TTL, at least 5 s apart, each
	// saying how long campaigning has failed; the others at Debug), Debug
	// for each attempt.
	// Default slog.Default(). Use slog.New(slog.DiscardHandler) for none.
	Logger *slog.Logger
}

// resolve returns the options with defaults applied, or an error naming the
// first invalid field.
func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Identity == "" {
		r.Identity = term.DefaultIdentity()
	} else if err := backend.ValidateIdentity(r.Identity); err != nil {
		return r, fmt.Errorf("elector: Options.Identity: %w", err)
	}
	tm, err := term.Resolve(r.TTL, r.RenewInterval, r.SafetyMargin, term.Limits{MinTTL: MinTTL, MaxTTL: MaxTTL, DefaultTTL: DefaultTTL})
	if err != nil {
		return r, fmt.Errorf("elector: %w", err)
	}
	r.TTL, r.RenewInterval, r.SafetyMargin = tm.TTL, tm.RenewInterval, tm.SafetyMargin
	switch {
	case r.Priority < 0:
		return r, fmt.Errorf("elector: Options.Priority is %d; want 0 (no preference) or more", r.Priority)
	case r.MinTerm < 0:
		return r, fmt.Errorf("elector: Options.MinTerm is %v; want 0 (yield at once) or more", r.MinTerm)
	case r.MinTerm > 0 && r.Priority == 0:
		return r, fmt.Errorf("elector: Options.MinTerm is %v but Priority is 0; MinTerm applies only to a candidate with a priority", r.MinTerm)
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r, nil
}

// validateNew checks New's positional arguments.
func validateNew(b backend.Backend, election string) error {
	if b == nil {
		return errors.New("elector: backend is nil")
	}
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("elector: %w", err)
	}
	return nil
}
