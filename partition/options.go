package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
)

// Defaults and limits of [New] and [Options].
const (
	// DefaultTTL is the lease TTL of partitions and membership when
	// [Options.TTL] is zero: [elector.DefaultTTL].
	DefaultTTL = elector.DefaultTTL
	// DefaultMaxMembers is [Options.MaxMembers] when it is zero.
	DefaultMaxMembers = 64
	// MembersLimit is the largest [Options.MaxMembers] New accepts: the
	// number of membership slots a group can ever have.
	MembersLimit = 1024
	// MaxPartitions is the largest number of partitions New accepts.
	MaxPartitions = 1 << 16
	// DefaultPollInterval is the longest [Options.PollInterval] chosen by
	// default.
	DefaultPollInterval = 500 * time.Millisecond
	// MaxWeight is the largest [Options.Weight] New accepts: one member's
	// share of the partitions is at most MaxWeight times another's.
	MaxWeight = 1000
)

// Options configure an [Assigner]. A nil *Options means all defaults. Every
// field's zero value selects its documented default.
type Options struct {
	// Identity names this member to the others: placement hashes it, and
	// backends report it as the holder of the partitions it owns. It must be
	// unique within the group: two members with one identity share one
	// share of the partitions (each partition still has one owner).
	// Default: "<hostname>-<pid>-<6 random hex digits>". It must not
	// contain ";weight=", which marks the weight in a membership slot (see
	// Weight).
	Identity string

	// Weight is this member's capacity relative to the others': each
	// member's share of the partitions is in proportion to its weight (see
	// [QuotasWeighted]), so a member of weight 2 holds twice as many as one
	// of weight 1, give or take one. A member of weight 1 holds its
	// membership slot under Identity, as members always have; a heavier one
	// holds it under Identity + ";weight=" + Weight, which is how the others
	// learn its weight, and how `elect partitions` shows it. Partitions are
	// held under Identity whatever the weight. Members of a release that
	// knows no weights read such a slot as a member named so, which holds
	// nothing: until every member knows weights, set none above 1 (mixed,
	// the placements disagree, which costs balance and time, never
	// safety). Default 1; between 1 and [MaxWeight].
	Weight int

	// TTL is how long a partition's lease lives at the backend without a
	// renewal: after a member crashes, its partitions are owned again within
	// about TTL. The membership slot's lease lives TTL/2, renewed every
	// RenewInterval/2, so that the others drop a crashed member before its
	// partitions' leases expire (TTL itself where the store refuses TTL/2).
	// Default [DefaultTTL] (15 s); between [elector.MinTTL] and
	// [elector.MaxTTL].
	TTL time.Duration

	// RenewInterval is the time between renewals of each lease. Default
	// TTL/3; it must be below TTL - SafetyMargin.
	RenewInterval time.Duration

	// SafetyMargin is how long before a lease's local deadline its partition
	// is revoked when no renewal has succeeded: the time OnAssigned has to
	// stop acting before another member can own the partition. Default
	// TTL/5; it must be below TTL/2.
	SafetyMargin time.Duration

	// PollInterval is how often the member list is read from the backend.
	// A join or a graceful leave is noticed within it, a crash within TTL/2
	// plus it. Each poll reads about as many membership elections as there
	// are members, rounded up to a multiple of 16, plus 16. Default min(RenewInterval, [DefaultPollInterval]);
	// at most RenewInterval.
	PollInterval time.Duration

	// MaxMembers is the largest number of members the group can have: the
	// number of membership slots. A member that finds every slot taken waits
	// for one to free. Default [DefaultMaxMembers]; at most [MembersLimit].
	MaxMembers int

	// OnAssigned is called in a goroutine of its own when this member starts
	// owning a partition. Its ctx is cancelled the moment ownership ends
	// (the partition is placed elsewhere, its lease is lost, or Run stops);
	// OnAssigned must then stop acting on the partition and return. If it
	// returns earlier, the member keeps the partition until ctx ends: work
	// can run elsewhere, watching ctx. Nil means nothing runs. It is not
	// called (nor is OnRevoked) when the partition's lease reaches its
	// step-down point before OnAssigned can start, as when the process was
	// stopped between winning and the call.
	OnAssigned func(ctx context.Context, a Assignment)

	// OnRevoked is called exactly once after each OnAssigned, once
	// OnAssigned has returned and the partition's lease has been released,
	// with the reason: an error wrapping [ErrMoved] (hand-over),
	// [elector.ErrLeaseLost], or the ctx error of Run (context.Canceled).
	// Calls for different partitions may run concurrently; for one partition
	// they are in order, and the partition's next OnAssigned starts after
	// OnRevoked has returned. Nil means no call.
	OnRevoked func(a Assignment, reason error)

	// Observer, if set, is called with each [elector.Event] of each
	// partition's election, whose name is [Election](group, p): campaigns,
	// assignments (EventElected), renewals, revocations, releases, with
	// their latency and outcome, so the adapter in package
	// github.com/leaderkit/elector/promelector works unchanged. It may be
	// called from several goroutines at once and must return quickly.
	Observer func(elector.Event)

	// Logger receives structured logs: Info for membership changes and
	// assignments, Warn for failures. Default slog.Default().
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
		return r, fmt.Errorf("partition: Options.Identity: %w", err)
	}
	if strings.Contains(r.Identity, weightMark) {
		return r, fmt.Errorf("partition: %w: Options.Identity %q contains %q, which marks a member's weight in its membership slot; set Options.Weight instead", backend.ErrInvalid, r.Identity, weightMark)
	}
	switch {
	case r.Weight == 0:
		r.Weight = 1
	case r.Weight < 1 || r.Weight > MaxWeight:
		return r, invalid("Weight", r.Weight, fmt.Sprintf("in [1, %d] (or 0 for 1)", MaxWeight))
	}
	if err := backend.ValidateIdentity(slotIdentity(r.Identity, r.Weight)); err != nil {
		return r, fmt.Errorf("partition: Options.Identity with %q appended, as its membership slot holds it (Options.Weight %d): %w", weightMark+strconv.Itoa(r.Weight), r.Weight, err)
	}
	tm, err := term.Resolve(r.TTL, r.RenewInterval, r.SafetyMargin, term.Limits{MinTTL: elector.MinTTL, MaxTTL: elector.MaxTTL, DefaultTTL: DefaultTTL})
	if err != nil {
		return r, fmt.Errorf("partition: %w: %w", backend.ErrInvalid, err)
	}
	r.TTL, r.RenewInterval, r.SafetyMargin = tm.TTL, tm.RenewInterval, tm.SafetyMargin
	switch {
	case r.PollInterval == 0:
		r.PollInterval = min(r.RenewInterval, DefaultPollInterval)
	case r.PollInterval < 0 || r.PollInterval > r.RenewInterval:
		return r, invalid("PollInterval", r.PollInterval, fmt.Sprintf("in (0, RenewInterval = %v] (or 0 for min(RenewInterval, %v))", r.RenewInterval, DefaultPollInterval))
	}
	switch {
	case r.MaxMembers == 0:
		r.MaxMembers = DefaultMaxMembers
	case r.MaxMembers < 1 || r.MaxMembers > MembersLimit:
		return r, invalid("MaxMembers", r.MaxMembers, fmt.Sprintf("in [1, %d] (or 0 for %d)", MembersLimit, DefaultMaxMembers))
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r, nil
}

func invalid(field string, v any, want string) error {
	return fmt.Errorf("partition: %w: Options.%s is %v; want %s", backend.ErrInvalid, field, v, want)
}

// validateNew checks New's positional arguments.
func validateNew(b backend.Backend, group string, n int) error {
	if b == nil {
		return fmt.Errorf("partition: %w: backend is nil", backend.ErrInvalid)
	}
	if n < 1 || n > MaxPartitions {
		return fmt.Errorf("partition: %w: number of partitions is %d; want in [1, %d]", backend.ErrInvalid, n, MaxPartitions)
	}
	for _, name := range []string{Election(group, n-1), memberElection(group, MembersLimit-1)} {
		if err := backend.ValidateElection(name); err != nil {
			return fmt.Errorf("partition: group %q: %w", group, err)
		}
	}
	return nil
}

// Election returns the name of the election that decides who owns partition
// p of group: group + "/p/" + p. Its tokens are the partition's fencing
// tokens; elector.Elector or `elect status` can read it like any election.
func Election(group string, p int) string { return group + "/p/" + strconv.Itoa(p) }

// memberElection returns the name of membership slot k of group.
func memberElection(group string, k int) string { return group + "/m/" + strconv.Itoa(k) }

// ErrMoved is the reason a partition is revoked when the current member list
// places it on another member: the hand-over of a rebalance. It wraps
// [elector.ErrResigned], so metrics count it as a resignation.
var ErrMoved = fmt.Errorf("partition: placed on another member: %w", elector.ErrResigned)

// ErrRunning is returned by [Assigner.Run] when another call to Run on the
// same Assigner has not returned yet.
var ErrRunning = errors.New("partition: already running")
