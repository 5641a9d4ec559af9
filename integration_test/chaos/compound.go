package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"time"

	"github.com/leaderkit/elector/internal/wait"
)

// Fault kinds timed against hand-overs, and faults that overlap.
const (
	// FaultRestartAfterHandOver waits for the next term to begin, then at
	// once kills one node up to a minority of the backend's nodes (one or
	// two of five) and restarts them
	// (Redis: empty, or with AOF in an AOF campaign; etcd and ZooKeeper
	// keep their data). A Redlock holder elected a moment ago may hold a
	// bare quorum that includes them.
	FaultRestartAfterHandOver = "restart-minority-after-handover"
	// FaultRestartDuringPause SIGSTOPs the leader for 1.5-2.5 TTL and,
	// TTL/4-TTL/2 into the pause, kills and restarts a minority of the
	// nodes as FaultRestartAfterHandOver does.
	FaultRestartDuringPause = "restart-during-pause"
	// FaultCutDuringHandOver waits for the next term to begin, then at
	// once cuts the new leader's links (toxiproxy timeout) and pauses a
	// minority of the nodes, both for 1.5-2.5 TTL.
	FaultCutDuringHandOver = "cut-during-handover"
)

// ModeFaults returns the fault kinds of a campaign mode: "restarts"
// (minority restarts, at random and right after hand-overs), "concurrent"
// (two overlapping faults), "priority" (the default kinds and the faults
// on the preferred candidate), or nil for "" and "partitions" (the default
// kinds, [FaultKinds]).
func ModeFaults(mode, serverKind string, aof bool) ([]string, error) {
	switch mode {
	case "", ModePartitions:
		return nil, nil
	case "restarts":
		if serverKind != "redis" {
			return []string{FaultKillMinor, FaultRestartAfterHandOver}, nil
		}
		random := FaultRestartMinorNoAOF
		if aof {
			random = FaultRestartMinorAOF
		}
		return []string{random, FaultRestartAfterHandOver}, nil
	case "concurrent":
		return []string{FaultRestartDuringPause, FaultCutDuringHandOver}, nil
	case "clock":
		return ClockFaults(serverKind)
	case ModePriority:
		return append(FaultKinds(serverKind, aof), FaultPausePreferred, FaultCutPreferred), nil
	}
	return nil, fmt.Errorf("unknown campaign mode %q (want restarts, concurrent, clock, partitions or priority)", mode)
}

// SplitCampaign splits a campaign name into its driver and persistence
// (redlock-aof, redlock-noaof, etcd, zookeeper) and its mode, the suffix
// "-restarts", "-concurrent", "-clock", "-partitions" or "-priority" ("" for none):
// "etcd-concurrent" runs etcd under overlapping faults, "etcd-partitions"
// runs [ModePartitions] under the default faults.
func SplitCampaign(name string) (base, mode string) {
	for _, m := range []string{"restarts", "concurrent", "clock", ModePartitions, ModePriority} {
		if b, ok := strings.CutSuffix(name, "-"+m); ok {
			return b, m
		}
	}
	return name, ""
}

// injectCompound runs one fault of the kinds above; it reports false for
// other kinds.
func (c *campaign) injectCompound(ctx context.Context, rng *rand.Rand, kind string) (bool, error) {
	ttl := c.cfg.TTL
	switch kind {
	case FaultRestartAfterHandOver:
		if !c.awaitTerm(ctx) {
			return true, nil
		}
		return true, c.restartNodes(rng, kind)
	case FaultRestartDuringPause:
		p, err := c.leaderTarget()
		if err != nil {
			return true, err
		}
		c.faultBegins(kind, p.name)
		defer c.faultHeals(kind)
		pause := jitter(rng, 3*ttl/2, 5*ttl/2)
		began := time.Now()
		c.signal(p, syscall.SIGSTOP, KindPause)
		defer c.signal(p, syscall.SIGCONT, KindResume)
		wait.Sleep(ctx, jitter(rng, ttl/4, ttl/2))
		if err := c.restartNodes(rng, kind); err != nil {
			return true, err
		}
		wait.Sleep(ctx, pause-time.Since(began))
		return true, nil
	case FaultCutDuringHandOver:
		if !c.awaitTerm(ctx) {
			return true, nil
		}
		p, err := c.leaderTarget()
		if err != nil {
			return true, err
		}
		var slot int
		_, _ = fmt.Sscanf(p.name, "s%d", &slot)
		names := c.pickNodes(rng, "minority", len(c.cfg.Addrs))
		c.faultBegins(kind, p.name+" + "+c.cfg.ServerKind+" "+strings.Join(names, ","))
		defer c.faultHeals(kind)
		if err := c.onNodes(c.cfg.ServerKind, names, "pause"); err != nil {
			return true, err
		}
		defer c.onNodes(c.cfg.ServerKind, names, "resume")
		return true, c.toxic(ctx, slot, jitter(rng, 3*ttl/2, 5*ttl/2), cutLinks...)
	}
	return false, nil
}

// awaitTerm waits until the next term begins (up to the recovery bound),
// polling every millisecond so that a fault lands within a few
// milliseconds of the hand-over. It reports whether a term began.
func (c *campaign) awaitTerm(ctx context.Context) bool {
	before := c.terms()
	deadline := time.Now().Add(c.cfg.Bound)
	for time.Now().Before(deadline) {
		if c.terms() > before {
			return true
		}
		if !wait.Sleep(ctx, time.Millisecond) {
			return false
		}
	}
	return false
}

// restartNodes kills one node up to a minority of the backend's nodes and starts them
// again at once: Redis empty (or with AOF in an AOF campaign), etcd and
// ZooKeeper with their data. It records a fault of kind on them unless
// kind is a compound fault already recorded.
func (c *campaign) restartNodes(rng *rand.Rand, kind string) error {
	names := c.pickNodes(rng, "minority", len(c.cfg.Addrs))
	names = names[:1+rng.IntN(len(names))] // one or two of five
	if kind == FaultRestartAfterHandOver {
		c.faultBegins(kind, c.cfg.ServerKind+" "+strings.Join(names, ","))
		defer c.faultHeals(kind)
	}
	if err := c.onNodes(c.cfg.ServerKind, names, "kill"); err != nil {
		return err
	}
	if c.cfg.ServerKind == "redis" {
		return c.onNodes(c.cfg.ServerKind, names, "restart", aofFlag(c.cfg.AOF))
	}
	return c.restartInTurn(c.cfg.ServerKind, names)
}
