package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leaderkit/elector"
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

// view is one reading of the member list.
type view struct {
	members  []string // sorted, without duplicates; holds self iff joined
	weights  []int    // each member's weight, indexed like members (nil: all 1)
	joined   bool
	complete bool // every slot has been read once: no failed read hides a member
}

// membership keeps this member in the group's member list: it holds one
// membership slot (an election named group/m/<k>) while Run runs, and reads
// every slot in use each PollInterval to learn the others.
type membership struct {
	a     *Assigner
	self  seat      // this member, as its slot shows it
	out   chan view // capacity 1; holds the latest view
	slots []seat    // the holder of each slot read, the zero seat when free

	known    []bool // whether each slot has been read at least once
	complete bool   // every slot in slots has been read at least once

	// The slot's lease runs on half the partitions' timing (see
	// memberTiming), so that a crashed member leaves the list, and the
	// others wait in the campaigns of its partitions, before those
	// partitions' leases expire.
	ttl, renewEvery, margin time.Duration

	slot int        // the slot this member holds, or -1
	t    *term.Term // the slot's lease, run by the term engine; nil without a slot

	full bool // every slot was taken at the last join: warned once

	twins       string    // the other slots held under this identity, as last read …
	twinsSince  time.Time // … since when …
	twinsWarned bool      // … and whether that was warned of
}

func newMembership(a *Assigner) *membership {
	m := &membership{a: a, self: seat{a.opts.Identity, a.opts.Weight}, out: make(chan view, 1), slot: -1}
	m.ttl, m.renewEvery, m.margin = memberTiming(&a.opts)
	return m
}

// memberTiming returns the TTL, renewal interval and safety margin of the
// membership slot's lease: half the partitions' own, or theirs when half
// the TTL would be below [elector.MinTTL]. Membership decides placement
// only (each partition has its own lease), so a slot lost to a slow
// renewal costs a rejoin and some moves, never safety; and with the slot
// gone after at most TTL/2, the others are already waiting in the dead
// member's partitions' campaigns when those leases expire, at most TTL
// after the crash.
func memberTiming(o *Options) (ttl, renewEvery, margin time.Duration) {
	if o.TTL/2 < elector.MinTTL {
		return o.TTL, o.RenewInterval, o.SafetyMargin
	}
	return o.TTL / 2, o.RenewInterval / 2, o.SafetyMargin / 2
}

// fullTiming makes the slot's lease use the partitions' timing: the store
// refused the shorter TTL (an etcd cluster grants no lease under one
// second; a ZooKeeper ensemble bounds session timeouts).
func (m *membership) fullTiming() bool {
	o := &m.a.opts
	if m.ttl == o.TTL {
		return false
	}
	m.ttl, m.renewEvery, m.margin = o.TTL, o.RenewInterval, o.SafetyMargin
	return true
}

// run keeps the member joined and publishes views until ctx ends, then
// leaves (releases its slot). It returns ctx.Err(), or a permanent backend
// error.
func (m *membership) run(ctx context.Context) error {
	sw := newSlotWatch(m.a.b, m.a.group)
	var poke <-chan struct{}
	if sw != nil {
		defer sw.stop()
		poke = sw.poke
	}
	// Leave before the watches are torn down: the others wait for the
	// slot's release, not for this member's cancelled watches to return.
	defer m.leave(ctx)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		if m.t != nil {
			m.keep(ctx)
		}
		if err := m.scan(ctx); err != nil {
			return err
		}
		if m.t == nil {
			if err := m.join(ctx); err != nil {
				return err
			}
		}
		m.publish()
		if sw != nil {
			sw.sync(ctx, m.slots, m.a.opts.Identity)
		}
		var ended <-chan struct{}
		if m.t != nil {
			ended = m.t.Ended()
		}
		t.Reset(m.a.opts.PollInterval)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-poke: // a slot another member held changed: scan now
		case <-ended: // the slot's lease is lost: rejoin now
		}
	}
}

// scan reads the slots in use. A slot whose read fails transiently keeps
// its last known holder. A scan never delays the slot's renewal: the term
// engine renews it.
func (m *membership) scan(ctx context.Context) error {
	slots, read, err := scanSlots(ctx, m.a.b, m.a.group, m.a.opts.MaxMembers, m.slots, false)
	if err != nil {
		return err
	}
	// The list is complete once every slot in it has been read at least
	// once: a slot whose read fails keeps its last reading, but one never
	// read may hide a member.
	m.complete = true
	for k := range slots {
		if k < len(read) && read[k] {
			for len(m.known) <= k {
				m.known = append(m.known, false)
			}
			m.known[k] = true
		}
		if k >= len(m.known) || !m.known[k] {
			m.complete = false
		}
	}
	if m.slot >= 0 {
		for len(slots) <= m.slot {
			slots = append(slots, seat{})
		}
		slots[m.slot] = m.self
	}
	m.slots = slots
	m.warnTwins(ctx)
	return nil
}

// warnTwins warns when another slot is held under this member's identity
// for longer than a slot's TTL: two members started with one Identity are
// two rows of the member list that cannot be told apart, and placement
// gives each its own share. A slot of the same identity that lapses within
// the TTL is this member's own from before a crash, not a twin. It warns
// once per change of those slots.
func (m *membership) warnTwins(ctx context.Context) {
	var twins []string
	for k, s := range m.slots {
		if m.slot >= 0 && k != m.slot && s.identity == m.self.identity {
			twins = append(twins, strconv.Itoa(k))
		}
	}
	got := strings.Join(twins, ",")
	switch {
	case got == "":
		m.twins, m.twinsSince = "", time.Time{}
	case got != m.twins:
		m.twins, m.twinsSince, m.twinsWarned = got, time.Now(), false
	case !m.twinsWarned && time.Since(m.twinsSince) > m.ttl:
		m.twinsWarned = true
		m.a.log.LogAttrs(ctx, slog.LevelWarn, "another member has this identity; give each member its own Identity",
			slog.String("slots", got), slog.Int("own_slot", m.slot))
	}
}

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

// keep drops the slot when the term engine has ended its lease (lost, or
// not renewed before its step-down point). The slot protects nothing (each
// partition has its own lease and deadline): the member rejoins.
func (m *membership) keep(ctx context.Context) {
	reason := m.t.Reason()
	if reason == nil {
		return
	}
	m.a.log.LogAttrs(ctx, slog.LevelWarn, "membership lost; rejoining", slog.Int("slot", m.slot), slog.Any("error", reason))
	_ = m.t.Release(ctx)
	m.slots[m.slot] = seat{}
	m.slot, m.t = -1, nil
}

// publish replaces the view waiting in out with the current one.
func (m *membership) publish() {
	v := view{joined: m.t != nil, complete: m.complete}
	var seats []seat
	for _, s := range m.slots {
		if s.identity != "" && (s.identity != m.self.identity || v.joined) {
			seats = append(seats, s)
		}
	}
	v.members, v.weights = roster(seats)
	select {
	case <-m.out:
	default:
	}
	m.out <- v
}

// errLeft is the reason the slot's term ends when the member leaves.
var errLeft = errors.New("partition: left the group")

// leave releases the slot, if held.
func (m *membership) leave(ctx context.Context) {
	if m.t != nil {
		m.t.End(errLeft)
		_ = m.t.Release(ctx)
		m.a.log.LogAttrs(ctx, slog.LevelInfo, "left", slog.Int("slot", m.slot))
		m.slot, m.t = -1, nil
	}
}

// release gives l back with a fresh context bounded by
// max(RenewInterval, 1s) (see term.Release).
func (m *membership) release(ctx context.Context, l backend.Lease) {
	_ = term.Release(ctx, l, m.a.timing())
}

// timing returns the timing of the slot's lease.
func (m *membership) timing() term.Timing {
	return term.Timing{TTL: m.ttl, RenewInterval: m.renewEvery, SafetyMargin: m.margin}
}
