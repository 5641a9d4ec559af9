package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
)

// joinChoices is how many of the lowest free slots a joiner picks from at
// random, so that members starting together rarely race for one slot.
const joinChoices = 8

// joinAttempts is how many free slots one join tries in turn.
const joinAttempts = 3

// joinProbe is how often a joiner reads the holder of the slot it
// campaigns for.
const joinProbe = 50 * time.Millisecond

// join campaigns for one of the lowest free slots, trying up to
// joinAttempts of them in turn: a slot another joiner is seen holding is
// given up at once (see campaignSlot), so that members starting together
// all join within a few round trips rather than a poll apart.
func (m *membership) join(ctx context.Context) error {
	var free []int
	for k, s := range m.slots {
		if s.identity == "" && len(free) < joinChoices {
			free = append(free, k)
		}
	}
	if len(free) == 0 {
		// Warn when the group becomes full, not at every poll while it stays so.
		level := slog.LevelWarn
		if m.full {
			level = slog.LevelDebug
		}
		m.full = true
		m.a.log.LogAttrs(ctx, level, "every membership slot is taken; waiting",
			slog.Int("max_members", m.a.opts.MaxMembers))
		return nil
	}
	if m.full {
		m.full = false
		m.a.log.LogAttrs(ctx, slog.LevelInfo, "a membership slot is free; joining")
	}
	for range joinAttempts {
		if len(free) == 0 {
			return nil
		}
		i := rand.N(len(free))
		k := free[i]
		free = slices.Delete(free, i, i+1)
		l, err := m.campaignSlot(ctx, k)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, backend.ErrInvalid) && m.fullTiming():
			m.a.log.LogAttrs(ctx, slog.LevelDebug, "membership TTL refused; using the partitions' TTL", slog.Any("error", err))
			return nil
		case backend.IsPermanent(err):
			return fmt.Errorf("partition: join %q: %w", m.a.group, err)
		case err != nil:
			m.a.log.LogAttrs(ctx, slog.LevelDebug, "join attempt failed", slog.Int("slot", k), slog.Any("error", err))
			continue
		}
		won := l.Deadline()
		if m.timing().PastStepDown(won) {
			m.release(ctx, l)
			return nil
		}
		m.slot = k
		m.t = term.Start(m.a.b, ctx, l, won, m.timing(), term.Hooks{
			Callback: "the membership",
			Renewed: func(r term.Renewal) {
				if r.Err != nil && !errors.Is(r.Err, backend.ErrLost) {
					m.a.log.LogAttrs(ctx, slog.LevelWarn, "membership renewal failed; retrying", slog.Any("error", r.Err))
				}
			},
		})
		m.t.Go(nil) // nothing runs while the slot is held
		m.slots[k] = m.self
		m.a.log.LogAttrs(ctx, slog.LevelInfo, "joined", slog.Int("slot", k), slog.Int("weight", m.self.weight), slog.Uint64("token", l.Token()))
		return nil
	}
	return nil
}

// campaignSlot campaigns for slot k for at most max(2 × PollInterval, 1 s),
// reading the slot's holder every joinProbe meanwhile: when another member
// holds it (a joiner that picked it too won), the campaign is given up at
// once instead of waiting in it.
func (m *membership) campaignSlot(ctx context.Context, k int) (backend.Lease, error) {
	o := &m.a.opts
	name := memberElection(m.a.group, k)
	me := slotIdentity(m.self.identity, m.self.weight)
	jctx, cancel := context.WithTimeout(ctx, max(2*o.PollInterval, time.Second))
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the probe ends with the campaign
	wg.Go(func() {
		t := time.NewTicker(joinProbe)
		defer t.Stop()
		for {
			select {
			case <-jctx.Done():
				return
			case <-t.C:
			}
			if h, err := m.a.b.Leader(jctx, name); err == nil && h.Identity != me {
				cancel()
				return
			}
		}
	})
	l, err := m.a.b.Campaign(jctx, backend.Candidate{Election: name, Identity: me, TTL: m.ttl})
	cancel()
	return l, err
}
