package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/leaderkit/elector/internal/wait"
)

// Fault kinds. Those ending in "-leader" target the candidate process that
// leads (a random one if none does); the others target backend nodes.
const (
	FaultKillLeader  = "kill-leader"  // SIGKILL; the slot starts a new process
	FaultPauseLeader = "pause-leader" // SIGSTOP for 1.5-2.5 TTL, then SIGCONT (the GC pause)
	FaultCutLeader   = "cut-leader"   // toxiproxy timeout on all its links, 1.5-2.5 TTL
	FaultSlowLeader  = "slow-leader"  // toxiproxy latency TTL/4 on its links, 2 TTL
	FaultResetLeader = "reset-leader" // toxiproxy reset_peer on its links, TTL/2
	FaultKillMinor   = "kill-minority"
	FaultKillMajor   = "kill-majority"
	FaultPauseMinor  = "pause-minority"
	FaultPauseMajor  = "pause-majority"
	// Redis: kill nodes and restart them at once, with AOF (appendfsync
	// always) or empty.
	FaultRestartMinorAOF   = "restart-minority-aof"
	FaultRestartMajorAOF   = "restart-majority-aof"
	FaultRestartMinorNoAOF = "restart-minority-noaof"
	FaultRestartMajorNoAOF = "restart-majority-noaof"
)

// FaultKinds returns the fault kinds for a backend of servers.sh kind
// serverKind (redis, etcd, zk); aof selects the Redis restart kinds.
func FaultKinds(serverKind string, aof bool) []string {
	kinds := []string{FaultKillLeader, FaultPauseLeader, FaultCutLeader, FaultSlowLeader, FaultResetLeader,
		FaultPauseMinor, FaultPauseMajor}
	switch {
	case serverKind != "redis":
		return append(kinds, FaultKillMinor, FaultKillMajor)
	case aof:
		return append(kinds, FaultRestartMinorAOF, FaultRestartMajorAOF)
	default:
		return append(kinds, FaultRestartMinorNoAOF, FaultRestartMajorNoAOF)
	}
}

// DocumentedRedlock reports the fault kinds whose violations the redlock
// driver documents (redlock/doc.go, # Safety: nodes must keep their data
// across restarts): nodes restarting without persistence during a term. A
// majority restarting empty loses the lock and the token counter; a
// minority restarting empty loses the lock too when the holder acquired it
// on a bare quorum that includes them (observed: seed 20261130).
func DocumentedRedlock(kind string) bool {
	return kind == FaultRestartMajorNoAOF || kind == FaultRestartMinorNoAOF
}

// nemesis injects faults on the seeded schedule until the campaign has
// enough faults and terms, or its time is up, then waits for a leader.
func (c *campaign) nemesis(ctx context.Context) error {
	cfg := c.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	began := time.Now()
	ttl := cfg.TTL
	faults := 0
	for faults < cfg.MinFaults || c.terms() < cfg.MinTerms {
		if time.Since(began) > cfg.MaxDuration {
			cfg.Logf("chaos: %s: time is up after %d faults and %d terms", cfg.Name, faults, c.terms())
			break
		}
		if !c.awaitLeader(ctx, cfg.Bound) && ctx.Err() != nil {
			return ctx.Err()
		}
		// Quiet time between faults, so that terms hand over on their own.
		if !wait.Sleep(ctx, jitter(rng, ttl/2, 3*ttl/2)) {
			return ctx.Err()
		}
		kind := cfg.Faults[rng.IntN(len(cfg.Faults))]
		if err := c.inject(ctx, rng, kind); err != nil {
			return fmt.Errorf("fault %d (%s): %w", faults+1, kind, err)
		}
		faults++
		if faults%20 == 0 {
			cfg.Logf("chaos: %s: %d faults, %d terms, %v", cfg.Name, faults, c.terms(), time.Since(began).Round(time.Second))
		}
	}
	c.awaitLeader(ctx, cfg.Bound)
	wait.Sleep(ctx, 2*ttl) // let the last term show it is steady
	return nil
}

// awaitLeader waits up to d for some candidate to lead.
func (c *campaign) awaitLeader(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c.leader() != nil {
			return true
		}
		if !wait.Sleep(ctx, 10*time.Millisecond) {
			return false
		}
	}
	return false
}

// inject runs one fault of kind from its start to its heal, recording both.
func (c *campaign) inject(ctx context.Context, rng *rand.Rand, kind string) error {
	ttl := c.cfg.TTL
	fault := func(target string) { c.hist.Add(Event{Mono: Mono(), Kind: KindFault, Proc: target, Note: kind}) }
	heal := func() { c.hist.Add(Event{Mono: Mono(), Kind: KindHeal, Note: kind}) }
	if strings.HasSuffix(kind, "-leader") {
		p := c.leader()
		if p == nil {
			c.mu.Lock()
			for _, q := range c.running {
				p = q
				break
			}
			c.mu.Unlock()
		}
		if p == nil {
			return errors.New("no candidate process is running")
		}
		var slot int
		_, _ = fmt.Sscanf(p.name, "s%d", &slot)
		fault(p.name)
		defer heal()
		switch kind {
		case FaultKillLeader:
			c.signal(p, syscall.SIGKILL, KindKill)
		case FaultPauseLeader:
			c.signal(p, syscall.SIGSTOP, KindPause)
			wait.Sleep(ctx, jitter(rng, 3*ttl/2, 5*ttl/2))
			c.signal(p, syscall.SIGCONT, KindResume)
		case FaultCutLeader:
			return c.toxic(ctx, slot, jitter(rng, 3*ttl/2, 5*ttl/2),
				`{"name":"cut-up","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`,
				`{"name":"cut-down","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)
		case FaultSlowLeader:
			return c.toxic(ctx, slot, 2*ttl, fmt.Sprintf(
				`{"name":"slow","type":"latency","stream":"downstream","attributes":{"latency":%d,"jitter":%d}}`,
				(ttl/4).Milliseconds(), (ttl/10).Milliseconds()))
		case FaultResetLeader:
			return c.toxic(ctx, slot, ttl/2,
				`{"name":"reset","type":"reset_peer","stream":"upstream","attributes":{"timeout":0}}`)
		}
		return nil
	}

	n := len(c.cfg.Addrs)
	count := (n - 1) / 2 // minority
	if strings.Contains(kind, "majority") {
		count = n/2 + 1
	}
	nodes := rng.Perm(n)[:count]
	slices.Sort(nodes)
	var names []string
	for _, i := range nodes {
		names = append(names, fmt.Sprint(i+1))
	}
	kindOf := c.cfg.ServerKind
	fault(kindOf + " " + strings.Join(names, ","))
	defer heal()
	switch {
	case strings.HasPrefix(kind, "pause-"):
		for _, node := range names {
			if err := c.servers("pause", kindOf, node); err != nil {
				return err
			}
		}
		wait.Sleep(ctx, jitter(rng, ttl, 2*ttl))
		for _, node := range names {
			if err := c.servers("resume", kindOf, node); err != nil {
				return err
			}
		}
	case strings.HasPrefix(kind, "kill-"):
		for _, node := range names {
			if err := c.servers("kill", kindOf, node); err != nil {
				return err
			}
		}
		wait.Sleep(ctx, jitter(rng, ttl, 2*ttl))
		for i, node := range names {
			wait := "--no-wait" // a lone member cannot become ready without the others
			if i == len(names)-1 {
				wait = ""
			}
			if err := c.servers("restart", kindOf, node, wait); err != nil {
				return err
			}
		}
	case strings.HasPrefix(kind, "restart-"):
		// Kill and restart at once: the case that loses a lock on a node
		// without persistence.
		for _, node := range names {
			if err := c.servers("kill", kindOf, node); err != nil {
				return err
			}
		}
		for _, node := range names {
			if err := c.servers("restart", kindOf, node, aofFlag(strings.HasSuffix(kind, "-aof"))); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown fault kind %q", kind)
	}
	return nil
}

// toxic adds toxics to every link of slot for d, then removes them.
func (c *campaign) toxic(ctx context.Context, slot int, d time.Duration, toxics ...string) error {
	for _, p := range c.proxies[slot] {
		for _, t := range toxics {
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(t)); err != nil {
				return err
			}
		}
	}
	wait.Sleep(ctx, d)
	for _, p := range c.proxies[slot] {
		p.Toxics.ResetToxics(context.WithoutCancel(ctx))
	}
	return nil
}

// jitter returns a uniform duration in [lo, hi].
func jitter(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}
