package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/leaderkit/elector/internal/wait"
)

// Clock faults, for Redlock campaigns in the "clock" mode (a campaign name
// ending in "-clock", such as redlock-noaof-clock). The Redis nodes run
// under scripts/clockshim.c (servers.sh restart redis N --clockshim), an
// LD_PRELOAD library that moves a node's wall clock — the clock Redis
// expires keys by — while its monotonic clock, and every other process's
// clocks, stay true. (libfaketime hangs redis-server at start; see
// clockshim.c.)
const (
	// FaultClockJump steps the wall clock of one or two of the five nodes
	// forward by 1.5-2.5 TTL at a random moment: every key there expires at
	// once. Kleppmann's scenario ("How to do distributed locking", 2016):
	// a holder whose quorum included the node may be left with too few
	// nodes while a rival wins the freed ones.
	FaultClockJump = "clock-jump"
	// FaultClockJumpAfterHandOver waits for the next term to begin, then at
	// once steps one or two nodes' wall clocks forward by 1.5-2.5 TTL: a
	// holder elected a moment ago may hold a bare quorum (3 of 5) that
	// includes them.
	FaultClockJumpAfterHandOver = "clock-jump-after-handover"
	// FaultClockJumpBareQuorum stages Kleppmann's scenario: it pauses two
	// of the five nodes for a TTL (their keys expire), waits for the next
	// term to begin (its leader wins on the other three, a bare quorum),
	// then at once steps one or two of those three nodes' wall clocks
	// forward by 1.5-2.5 TTL and resumes the paused two. The leader then
	// holds its key on one or two nodes while three or four are free. A
	// waiting rival would retry only when the keys it saw were due to
	// expire, after the leader's next renewal has found the loss, so a
	// non-leading candidate is killed just before the jump: its successor
	// process campaigns at once.
	FaultClockJumpBareQuorum = "clock-jump-bare-quorum"
	// FaultClockSlew makes one or two nodes' wall clocks run fast by half
	// the drift factor the candidates use (backend.DefaultDriftFactor, 1 %:
	// 0.5 %) for 3 TTL, then at the true rate again (keeping the time they
	// gained). Within the documented drift this must be harmless.
	FaultClockSlew = "clock-slew"
)

// clockSlewPPM is FaultClockSlew's rate: half of the default drift factor
// (0.01) in parts per million.
const clockSlewPPM = 5000

// ClockFaults returns the fault kinds of the "clock" mode. Only Redis nodes
// can run under the clock shim.
func ClockFaults(serverKind string) ([]string, error) {
	if serverKind != "redis" {
		return nil, fmt.Errorf("the clock mode needs Redis nodes (a redlock campaign), not %s", serverKind)
	}
	return []string{FaultClockJump, FaultClockJumpAfterHandOver, FaultClockJumpBareQuorum, FaultClockSlew}, nil
}

// DocumentedClock reports the fault kinds whose overlaps redlock/doc.go
// (# Safety) documents: a forward step of a node's wall clock breaks the
// assumption that the nodes' clocks run at about the same rate. A slew
// within the drift factor breaks nothing. Stale writes accepted by the fence
// stay failures whatever the fault: see [FailStaleWrites].
func DocumentedClock(kind string) bool {
	return kind == FaultClockJump || kind == FaultClockJumpAfterHandOver || kind == FaultClockJumpBareQuorum
}

// FailStaleWrites clears Documented on the violations that no clock
// fault excuses: tokens out of order, and a write the fence accepted with a
// token below one it had accepted before, or from no term at all (the
// fence's own failures). A clock jump can elect a second leader while the
// first still acts, and the checker then also reports each write of the
// first that the fence accepted after the second's term began; the fence
// cannot refuse those until the second leader has written its higher
// token (redlock/doc.go: a Fence only refuses writes once a newer term has
// written), so they stay documented with the overlap they follow.
func FailStaleWrites(r *Result) {
	for i, v := range r.Violations {
		window := v.Kind == ViolationStaleWrite && strings.Contains(v.Detail, "later term began")
		if v.Kind == ViolationTokenOrder || v.Kind == ViolationStaleWrite && !window {
			r.Violations[i].Documented = false
		}
	}
}

// clockFlag is servers.sh restart's option that runs a Redis node under
// the clock shim, or "" without.
func clockFlag(clock bool) string {
	if clock {
		return "--clockshim"
	}
	return ""
}

// injectClock runs one clock fault; it reports false for other kinds.
func (c *campaign) injectClock(ctx context.Context, rng *rand.Rand, kind string) (bool, error) {
	ttl := c.cfg.TTL
	switch kind {
	case FaultClockJump, FaultClockJumpAfterHandOver:
		if kind == FaultClockJumpAfterHandOver && !c.awaitTerm(ctx) {
			return true, nil
		}
		names := c.clockNodes(rng)
		step := jitter(rng, 3*ttl/2, 5*ttl/2)
		c.faultBegins(kind, fmt.Sprintf("redis %s +%v", strings.Join(names, ","), step))
		defer c.faultHeals(kind)
		if err := c.stepClocks(names, step, 0); err != nil {
			return true, err
		}
		// The clocks stay ahead: the jump is over at once, its effects last
		// up to a TTL (the keys the rivals won meanwhile).
		wait.Sleep(ctx, ttl)
		return true, nil
	case FaultClockJumpBareQuorum:
		return true, c.jumpBareQuorum(ctx, rng, kind)
	case FaultClockSlew:
		names := c.clockNodes(rng)
		c.faultBegins(kind, fmt.Sprintf("redis %s %d ppm fast", strings.Join(names, ","), clockSlewPPM))
		defer c.faultHeals(kind)
		if err := c.stepClocks(names, 0, clockSlewPPM); err != nil {
			return true, err
		}
		wait.Sleep(ctx, 3*ttl)
		return true, c.stepClocks(names, 0, 0)
	}
	return false, nil
}

// jumpBareQuorum runs FaultClockJumpBareQuorum.
func (c *campaign) jumpBareQuorum(ctx context.Context, rng *rand.Rand, kind string) error {
	ttl := c.cfg.TTL
	paused := c.pickNodes(rng, "minority", len(c.cfg.Addrs))
	var rest []string
	for n := range c.cfg.Addrs {
		if name := fmt.Sprint(n + 1); !slices.Contains(paused, name) {
			rest = append(rest, name)
		}
	}
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	jumped := rest[:1+rng.IntN(2)]
	slices.Sort(jumped)
	step := jitter(rng, 3*ttl/2, 5*ttl/2)
	c.faultBegins(kind, fmt.Sprintf("redis %s paused, then %s +%v", strings.Join(paused, ","), strings.Join(jumped, ","), step))
	defer c.faultHeals(kind)
	if err := c.onNodes(c.cfg.ServerKind, paused, "pause"); err != nil {
		return err
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = c.onNodes(c.cfg.ServerKind, paused, "resume")
		}
	}()
	wait.Sleep(ctx, ttl) // the keys on the paused nodes expire meanwhile
	if !c.awaitTerm(ctx) {
		return nil
	}
	c.killRival()
	if err := c.stepClocks(jumped, step, 0); err != nil {
		return err
	}
	resumed = true
	if err := c.onNodes(c.cfg.ServerKind, paused, "resume"); err != nil {
		return err
	}
	wait.Sleep(ctx, ttl)
	return nil
}

// stepClocks steps the wall clocks of nodes by step and sets their rate
// to ratePPM, as servers.sh clock does, but by writing the shim's control
// files directly: a servers.sh run takes tens of milliseconds under load,
// and a jump timed against a hand-over must land within a renewal
// interval. The format ("OFFSET_US RATE_PPM SINCE_US") is clockshim.c's.
func (c *campaign) stepClocks(nodes []string, step time.Duration, ratePPM int64) error {
	state := os.Getenv("ELECTOR_STATE_DIR") // servers.sh env sets it
	if state == "" {
		return errors.New("ELECTOR_STATE_DIR is not set: eval the output of scripts/servers.sh env")
	}
	for _, n := range nodes {
		dir := filepath.Join(state, "redis", n)
		if _, err := os.Stat(filepath.Join(dir, "clockshim")); err != nil {
			return fmt.Errorf("redis %s does not run under the clock shim: %w", n, err)
		}
		var off, rate, since int64
		if b, err := os.ReadFile(filepath.Join(dir, "clock")); err == nil {
			_, _ = fmt.Sscan(string(b), &off, &rate, &since)
		}
		now := time.Now().UnixMicro()
		if rate != 0 && now > since {
			off += (now - since) * rate / 1_000_000 // keep what the old rate added
		}
		tmp := filepath.Join(dir, "clock.tmp")
		line := fmt.Sprintf("%d %d %d\n", off+step.Microseconds(), ratePPM, now)
		if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, "clock")); err != nil {
			return err
		}
	}
	return nil
}

// killRival SIGKILLs a candidate process that does not lead, if any: its
// slot starts a new process, whose first acquire round comes at once
// rather than after a waiting candidate's back-off.
func (c *campaign) killRival() {
	leader := c.leader()
	c.mu.Lock()
	var rival *proc
	for _, p := range c.running {
		if p != leader {
			rival = p
			break
		}
	}
	c.mu.Unlock()
	if rival != nil {
		c.signal(rival, syscall.SIGKILL, KindKill)
	}
}

// clockNodes returns one or two of the five nodes, at random.
func (c *campaign) clockNodes(rng *rand.Rand) []string {
	names := c.pickNodes(rng, "minority", len(c.cfg.Addrs))
	return names[:1+rng.IntN(len(names))]
}
