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

// spareSlots is how many free membership slots past the highest one taken
// are read at each poll: joiners take one of the lowest free slots, so they
// appear there.
const spareSlots = 16

// scanParallelism bounds the concurrent Leader reads of one scan.
const scanParallelism = 8

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

// scanSlots reads the membership slots of group in chunks of spareSlots
// until a whole chunk is free (joiners take one of the lowest free slots, so
// no member lies beyond), or maxMembers slots are read. The first read
// covers every chunk up to the one holding the highest slot taken in prev,
// and the chunk after it (two chunks when prev has none), so a scan of a
// settled group is one read (one request per node, on a
// [backend.BatchReader]); each read whose last chunk has a slot taken reads
// one more chunk. A member past a run of more than spareSlots free slots
// (members between them left) is seen when the run does not fill a whole
// chunk: reading only spareSlots past the highest slot taken missed a
// member 18 free slots further. It returns the holder of each slot
// read, identity and weight (see parseSlot), the zero seat for a free one.
// When strict, every failed read is an error; otherwise a slot whose read
// fails transiently keeps its value in prev (free beyond it), and only a
// permanent failure is an error; which slots were read is returned too.
func scanSlots(ctx context.Context, b backend.Backend, group string, maxMembers int, prev []seat, strict bool) ([]seat, []bool, error) {
	var out []seat
	var read []bool
	n := min((highestTaken(prev)/spareSlots+2)*spareSlots, maxMembers)
	for lo := 0; lo < maxMembers; lo, n = lo+n, min(spareSlots, maxMembers-lo-n) {
		ids, errs := readSlots(ctx, b, group, lo, n)
		for k, err := range errs {
			switch {
			case err == nil:
			case ctx.Err() != nil:
				return nil, nil, ctx.Err()
			case strict || backend.IsPermanent(err):
				return nil, nil, fmt.Errorf("partition: read members of %q: %w", group, err)
			case lo+k < len(prev):
				ids[k] = prev[lo+k]
			}
			read = append(read, err == nil)
		}
		out = append(out, ids...)
		if len(out)-(highestTaken(out)+1) >= spareSlots {
			break
		}
	}
	return out, read, nil
}

// highestTaken returns the index of the last slot in slots with a holder,
// or -1 when none has one.
func highestTaken(slots []seat) int {
	for k := len(slots) - 1; k >= 0; k-- {
		if slots[k].identity != "" {
			return k
		}
	}
	return -1
}

// readSlots reads the holders of slots [lo, lo+n) of group: identity and
// weight, or the zero seat with a nil error when a slot is free.
func readSlots(ctx context.Context, b backend.Backend, group string, lo, n int) ([]seat, []error) {
	hs, errs := readHolders(ctx, b, n, scanParallelism, func(k int) string { return memberElection(group, lo+k) })
	ids := make([]seat, n)
	for k, h := range hs {
		ids[k] = parseSlot(h.Identity)
	}
	return ids, errs
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
