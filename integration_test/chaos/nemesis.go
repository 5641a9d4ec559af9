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
	// ZooKeeper: SIGSTOP the ensemble's leader server for 1/2 to 4/5 of
	// its syncLimit × tickTime (Config.SyncWindow): its followers keep
	// answering the candidates, and the leader, resumed, expires sessions
	// by its own stale count.
	FaultPauseStoreLeader = "pause-store-leader"
	// Redis: kill nodes and restart them at once, with AOF (appendfsync
	// always) or empty.
	FaultRestartMinorAOF   = "restart-minority-aof"
	FaultRestartMajorAOF   = "restart-majority-aof"
	FaultRestartMinorNoAOF = "restart-minority-noaof"
	FaultRestartMajorNoAOF = "restart-majority-noaof"
	// Kubernetes: SIGKILL the kube-apiserver and restart it after 1-2 TTL,
	// or SIGSTOP it for 1-2 TTL (its clients' requests and watches hang).
	FaultKillAPIServer  = "kill-apiserver"
	FaultPauseAPIServer = "pause-apiserver"
)

// UnderPrefix marks the fault kinds that hit the nodes of the store under
// the backend's servers ([Config.UnderKind]: the etcd cluster in which the
// kube-apiserver keeps its Leases), e.g. "etcd-pause-majority".
const UnderPrefix = "etcd-"

// FaultKinds returns the fault kinds for a backend of servers.sh kind
// serverKind (redis, etcd, zk, kube); aof selects the Redis restart kinds.
// For kube, the node faults hit the one apiserver and, with [UnderPrefix],
// the etcd members under it.
func FaultKinds(serverKind string, aof bool) []string {
	kinds := []string{FaultKillLeader, FaultPauseLeader, FaultCutLeader, FaultSlowLeader, FaultResetLeader}
	if serverKind == "kube" {
		return append(kinds, FaultKillAPIServer, FaultPauseAPIServer,
			UnderPrefix+FaultPauseMinor, UnderPrefix+FaultPauseMajor, UnderPrefix+FaultKillMinor)
	}
	kinds = append(kinds, FaultPauseMinor, FaultPauseMajor)
	switch {
	case serverKind == "zk":
		return append(kinds, FaultKillMinor, FaultKillMajor, FaultPauseStoreLeader)
	case serverKind != "redis":
		return append(kinds, FaultKillMinor, FaultKillMajor)
	case aof:
		return append(kinds, FaultRestartMinorAOF, FaultRestartMajorAOF)
	default:
		return append(kinds, FaultRestartMinorNoAOF, FaultRestartMajorNoAOF)
	}
}

// DocumentedRedlock reports the fault kinds whose violations the redlock
// driver documents (redlock/doc.go, # Safety): a majority of nodes
// restarting without persistence during a term loses the token counter
// (the restart delay keeps the lock exclusive, but the next token may be
// lower). A minority restarting empty is not documented: the restart delay
// keeps the nodes out of quorums until the locks they granted have expired,
// so any violation after it fails the campaign.
func DocumentedRedlock(kind string) bool {
	return kind == FaultRestartMajorNoAOF
}

// nemesis injects faults on the seeded schedule until the campaign has
// enough faults and terms, or its time is up, then waits for a leader.
func (c *campaign) nemesis(ctx context.Context) error {
	cfg := c.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	began := time.Now()
	ttl := cfg.TTL
	faults := 0
	for faults < cfg.MinFaults || c.terms() < cfg.MinTerms || c.migrations() < cfg.Migrations {
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

// awaitLeader waits up to d for some candidate to lead (in partition mode:
// for every partition to have an owner, so that the next fault does not
// land on a recovery still under way).
func (c *campaign) awaitLeader(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c.leader() != nil && (c.cfg.Mode != ModePartitions || c.owned() == c.cfg.Partitions) {
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
	if ok, err := c.injectCompound(ctx, rng, kind); ok {
		return err
	}
	if ok, err := c.injectClock(ctx, rng, kind); ok {
		return err
	}
	if kind == FaultPauseStoreLeader {
		return c.pauseStoreLeader(ctx, rng)
	}
	if strings.HasSuffix(kind, "-leader") || strings.HasSuffix(kind, "-preferred") {
		return c.injectLeader(ctx, rng, kind)
	}
	return c.injectNodes(ctx, rng, kind)
}

// faultBegins records the start of a fault of kind on target.
func (c *campaign) faultBegins(kind, target string) {
	c.hist.Add(Event{Mono: Mono(), Kind: KindFault, Proc: target, Note: kind})
}

// faultHeals records the heal of a fault of kind.
func (c *campaign) faultHeals(kind string) {
	c.hist.Add(Event{Mono: Mono(), Kind: KindHeal, Note: kind})
}

// leaderTarget returns the leading candidate process, or any running one
// if none leads.
func (c *campaign) leaderTarget() (*proc, error) {
	if p := c.leader(); p != nil {
		return p, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.running {
		return q, nil
	}
	return nil, errors.New("no candidate process is running")
}

// cutLinks are the toxics that cut a candidate's links both ways.
var cutLinks = []string{
	`{"name":"cut-up","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`,
	`{"name":"cut-down","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`,
}

// injectLeader runs one "-leader" fault on the leading candidate process,
// or one "-preferred" fault on the preferred one ([campaign.preferredTarget]).
func (c *campaign) injectLeader(ctx context.Context, rng *rand.Rand, kind string) error {
	ttl := c.cfg.TTL
	target := c.leaderTarget
	if strings.HasSuffix(kind, "-preferred") {
		target = c.preferredTarget
	}
	p, err := target()
	if err != nil {
		return err
	}
	var slot int
	_, _ = fmt.Sscanf(p.name, "s%d", &slot)
	c.faultBegins(kind, p.name)
	defer c.faultHeals(kind)
	switch kind {
	case FaultKillLeader:
		c.signal(p, syscall.SIGKILL, KindKill)
	case FaultPauseLeader, FaultPausePreferred:
		c.signal(p, syscall.SIGSTOP, KindPause)
		wait.Sleep(ctx, jitter(rng, 3*ttl/2, 5*ttl/2))
		c.signal(p, syscall.SIGCONT, KindResume)
	case FaultCutLeader, FaultCutPreferred:
		return c.toxic(ctx, slot, jitter(rng, 3*ttl/2, 5*ttl/2), cutLinks...)
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

// pickNodes returns the servers.sh numbers (sorted) of a random minority
// or, for a "majority" kind, majority of the n backend nodes.
func (c *campaign) pickNodes(rng *rand.Rand, kind string, n int) []string {
	return pickFrom(rng, kind, c.first(), n)
}

// pickFrom returns the numbers (sorted) of a random minority or, for a
// "majority" kind, majority of n nodes numbered from first.
func pickFrom(rng *rand.Rand, kind string, first, n int) []string {
	count := (n - 1) / 2 // minority
	if strings.Contains(kind, "majority") {
		count = n/2 + 1
	}
	nodes := rng.Perm(n)[:count]
	slices.Sort(nodes)
	var names []string
	for _, i := range nodes {
		names = append(names, fmt.Sprint(first+i))
	}
	return names
}

// OldPrefix marks a migrate campaign's fault kinds that hit the old
// store's nodes instead of the new one's (e.g. "old-pause-minority").
const OldPrefix = "old-"

// OldFaults returns the node faults a migrate campaign injects on the old
// store, of servers.sh kind serverKind. Redis nodes restart with AOF only:
// the marker that refuses late old-only replicas must survive a restart
// (the runbook requires persistence on the old store, see migrate's doc).
func OldFaults(serverKind string) []string {
	kinds := []string{FaultPauseMinor, FaultPauseMajor}
	if serverKind == "redis" {
		kinds = append(kinds, FaultRestartMinorAOF)
	} else {
		kinds = append(kinds, FaultKillMinor)
	}
	for i, k := range kinds {
		kinds[i] = OldPrefix + k
	}
	return kinds
}

// injectNodes runs one fault of kind on a minority or majority of the
// backend nodes (of the old store's, for an [OldPrefix] kind; of the store
// under the backend, for an [UnderPrefix] kind; the apiserver, the one
// node of a kube backend, for kill-apiserver and pause-apiserver).
func (c *campaign) injectNodes(ctx context.Context, rng *rand.Rand, kind string) error {
	ttl := c.cfg.TTL
	serverKind, n := c.cfg.ServerKind, len(c.cfg.Addrs)
	base, old := strings.CutPrefix(kind, OldPrefix)
	if old {
		serverKind, n = c.cfg.OldKind, len(c.cfg.OldAddrs)
	}
	base, under := strings.CutPrefix(base, UnderPrefix)
	if under && c.cfg.UnderKind != "" {
		serverKind, n = c.cfg.UnderKind, len(c.cfg.UnderAddrs)
	}
	switch base {
	case FaultKillAPIServer:
		base = FaultKillMajor // the majority of one node: the apiserver
	case FaultPauseAPIServer:
		base = FaultPauseMajor
	}
	first := c.first()
	if old || under {
		first = 1
	}
	names := pickFrom(rng, base, first, n)
	c.faultBegins(kind, serverKind+" "+strings.Join(names, ","))
	defer c.faultHeals(kind)
	switch {
	case strings.HasPrefix(base, "pause-"):
		if err := c.onNodes(serverKind, names, "pause"); err != nil {
			return err
		}
		wait.Sleep(ctx, jitter(rng, ttl, 2*ttl))
		return c.onNodes(serverKind, names, "resume")
	case strings.HasPrefix(base, "kill-"):
		if err := c.onNodes(serverKind, names, "kill"); err != nil {
			return err
		}
		wait.Sleep(ctx, jitter(rng, ttl, 2*ttl))
		return c.restartInTurn(serverKind, names)
	case strings.HasPrefix(base, "restart-"):
		// Kill and restart at once: the case that loses a lock on a node
		// without persistence.
		if err := c.onNodes(serverKind, names, "kill"); err != nil {
			return err
		}
		return c.onNodes(serverKind, names, "restart", aofFlag(strings.HasSuffix(base, "-aof")))
	default:
		return fmt.Errorf("unknown fault kind %q", kind)
	}
}

// onNodes runs servers.sh verb on each of the nodes of serverKind in turn
// (with the extra arguments after the node), stopping at the first error.
func (c *campaign) onNodes(serverKind string, nodes []string, verb string, extra ...string) error {
	for _, node := range nodes {
		if err := c.servers(append([]string{verb, serverKind, node}, extra...)...); err != nil {
			return err
		}
	}
	return nil
}

// restartInTurn restarts the killed nodes of serverKind, waiting only for
// the last to be ready.
func (c *campaign) restartInTurn(serverKind string, nodes []string) error {
	for i, node := range nodes {
		wait := "--no-wait" // a lone member cannot become ready without the others
		if i == len(nodes)-1 {
			wait = ""
		}
		if err := c.servers("restart", serverKind, node, wait); err != nil {
			return err
		}
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
