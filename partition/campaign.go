package partition

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
)

// maxCampaigns bounds the campaigns one member has in flight. A member
// campaigns only for partitions placed on it, at most its quota; up to this
// bound they all wait at once, so that each is taken the moment its old
// owner lets it go, and the backend sees one wave of requests per change.
const maxCampaigns = 256

// camp is a campaign in flight.
type camp struct {
	cancel    context.CancelFunc
	cancelled bool
	free      bool // counted in the window: no other member was known to hold the partition
	// behind is the departed member whose lease the campaign waits out,
	// "" for none; keepUntil, while the partition is placed on another
	// member, when the campaign is cancelled after all (see keeps).
	behind    string
	keepUntil time.Time
}

type campResult struct {
	p        int
	lease    backend.Lease
	deadline time.Time // the lease's Deadline when it was won
	err      error
	took     time.Duration
}

type retry struct {
	at      time.Time
	attempt int
}

// campaign starts a campaign for partition p; free tells whether it counts
// in the window.
func (l *loop) campaign(ctx context.Context, p int, free bool) {
	cctx, cancel := context.WithCancel(ctx)
	behind := ""
	if id, ok := l.plan.awaited[p]; ok && !l.isMember(id) {
		behind = id
	}
	l.camps[p] = &camp{cancel: cancel, free: free, behind: behind}
	if free {
		l.win.active++
	}
	c := backend.Candidate{Election: Election(l.a.group, p), Identity: l.a.opts.Identity, TTL: l.a.opts.TTL}
	l.a.log.LogAttrs(ctx, slog.LevelDebug, "campaigning", slog.Int("partition", p), slog.Bool("free", free))
	go func() {
		began := time.Now()
		ls, err := l.a.b.Campaign(cctx, c)
		r := campResult{p: p, lease: ls, err: err, took: time.Since(began)}
		if err == nil {
			r.deadline = ls.Deadline()
		}
		l.campaigned <- r
	}()
}

// keeps reports whether campaign c, for a partition no longer placed on
// this member, goes on: a campaign waiting out a departed member's lease
// is kept until that lease must have ended (a TTL and a poll after the
// partition was first placed elsewhere), unless this member stops or is
// out of the member list. The member the partition is now placed on may
// not campaign for it: its own view of the member list can place it on
// yet another, or it is still joining; without the kept campaign nobody
// would take the partition when the lease lapses, until some member short
// of its quota read it free (takeovers 0.2 s over TTL + 1 s on etcd in the
// partition chaos, amid a join and two leaves). When both campaign, the
// first in line wins and, if the placement says so, hands it over: an
// extra move, never an orphan.
func (l *loop) keeps(c *camp, now time.Time) bool {
	if c.behind == "" || l.stopping || !l.view.joined || l.isMember(c.behind) {
		return false
	}
	if c.keepUntil.IsZero() {
		c.keepUntil = now.Add(l.a.opts.TTL + l.a.opts.PollInterval)
	}
	return now.Before(c.keepUntil)
}

// onCampaign handles a campaign's outcome.
func (l *loop) onCampaign(ctx context.Context, r campResult) {
	c := l.camps[r.p]
	delete(l.camps, r.p)
	c.cancel()
	if c.free {
		l.win.active--
	}
	if !c.cancelled {
		l.a.observe(r.p, elector.Event{Kind: elector.EventCampaign, Took: r.took, Err: r.err})
	}
	now := time.Now()
	if r.err == nil && !c.cancelled && !l.placed[r.p] && !c.keepUntil.IsZero() {
		// A kept campaign won: hold the partition, and place again with
		// it counted as held. The placement is sticky: this member keeps
		// it within its quota, and hands it over like any other beyond.
		l.a.log.LogAttrs(ctx, slog.LevelDebug, "won a partition placed on another member, behind a departed member",
			slog.Int("partition", r.p), slog.String("departed", c.behind))
		l.placed[r.p] = true
		l.plan.replan = true
	}
	switch {
	case r.err == nil && (c.cancelled || !l.placed[r.p] || ctx.Err() != nil):
		// Not wanted, or won as Run's context ended: a term started now
		// would run OnAssigned after Run was told to stop.
		l.releaseStray(ctx, r.lease)
	case r.err == nil && l.a.timing().PastStepDown(r.deadline):
		l.releaseStray(ctx, r.lease) // won too late to act safely
		l.win.Shrink(now.Add(-r.took), now)
		l.backoff(r.p)
	case r.err == nil:
		l.win.Grow()
		l.hold(ctx, r.p, r.lease, r.deadline)
	case c.cancelled:
	case backend.IsPermanent(r.err):
		l.stop(fmt.Errorf("partition: campaign %q: %w", Election(l.a.group, r.p), r.err))
	default:
		l.a.log.LogAttrs(ctx, slog.LevelWarn, "campaign failed; retrying",
			slog.Int("partition", r.p), slog.Int("window", l.win.Size()), slog.Any("error", r.err))
		l.win.Shrink(now.Add(-r.took), now)
		l.backoff(r.p)
	}
}

// backoff schedules partition p's next campaign after a jittered,
// exponentially growing delay capped at RenewInterval.
func (l *loop) backoff(p int) {
	r := l.retries[p]
	r.at = time.Now().Add(term.Backoff(r.attempt, l.a.opts.RenewInterval))
	r.attempt++
	l.retries[p] = r
}
