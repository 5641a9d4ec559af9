package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/leaderkit/elector/internal/wait"
	"github.com/leaderkit/elector/migrate"
)

// Campaign modes beyond the single election ([Config.Mode]).
const (
	// ModePartitions: the candidates are members of one partition group
	// (package partition) sharing [Config.Partitions] partitions; each
	// leaves gracefully after 5-15 TTL (TTLs of at most 2 s) and joins again, so partitions hand
	// over cooperatively, besides the nemesis's faults. Every partition is
	// an election of its own (key p<N>) with a fence resource of its own;
	// [CheckKeys] checks each.
	ModePartitions = "partitions"
	// ModeMigrate: the candidates lead one election through a migrating
	// backend (package migrate) and a runbook rolls them, one at a time,
	// from phase old to both, to new, and, once the marker is written and a
	// late old-only replica was refused, to done; then the next migration
	// begins on a fresh election (key m<N>, a fence resource of its own,
	// which sees the tokens of the old and the new store).
	ModeMigrate = "migrate"
)

// migration is the runbook's state, guarded by campaign.mu.
type migration struct {
	n        int             // the migration under way, from 0
	election string          // its election
	phase    []migrate.Phase // per slot (the last: the late replica)
	done     int             // full migrations completed
	maxToken uint64          // the highest token elected so far
	cleaned  int             // migrations whose step 4 (Cleanup) succeeded
	cleanErr []error         // step 4 failures: the campaign fails
}

// args returns the command line of candidate process name.
func (c *campaign) args(name, election string, addrs []string) []string {
	cfg := c.cfg
	ttl := cfg.TTL
	// Leaders resign after ¼ to 1 TTL and members leave and join every 5-15
	// TTL, counted in TTLs of at most 2 s: a graceful end hands over at once
	// whatever the TTL, so a long TTL (ZooKeeper's stock timing) keeps the
	// hand-overs of the others.
	churn := min(ttl, 2*time.Second)
	a := []string{"-proc", name, "-fence", c.fence.URL(), "-ttl", ttl.String(),
		"-term-min", (churn / 4).String(), "-term-max", churn.String()}
	switch cfg.Mode {
	case ModePartitions:
		return append(append(a, c.backendArgs(addrs)...), "-election", election,
			"-partitions", fmt.Sprint(cfg.Partitions), "-write-every", (ttl / 4).String(),
			"-member-min", (5 * churn).String(), "-member-max", (15 * churn).String(),
			// Up to 256 campaigns in flight per member start at once.
			"-request-timeout", "300ms")
	case ModePriority:
		var slot, gen int
		_, _ = fmt.Sscanf(name, "s%dg%d", &slot, &gen)
		return append(append(a, c.backendArgs(addrs)...), "-election", election,
			"-priority", fmt.Sprint(priorityOf(cfg.Seed, slot, gen)), "-min-term", ttl.String(),
			"-member-min", (3 * churn).String(), "-member-max", (10 * churn).String())
	case ModeMigrate:
		var slot int
		_, _ = fmt.Sscanf(name, "s%d", &slot)
		c.mu.Lock()
		phase, m, election := c.mig.phase[slot], c.mig.n, c.mig.election
		c.mu.Unlock()
		nw := storeURL(cfg.Driver, addrs[:len(cfg.Addrs)])
		old := storeURL(cfg.OldDriver, addrs[len(cfg.Addrs):])
		u := fmt.Sprintf("%s%s://?old=%s&new=%s", migrate.SchemePrefix, phase, url.QueryEscape(old), url.QueryEscape(nw))
		return append(a, "-url", u, "-election", election, "-key", fmt.Sprintf("m%d", m))
	}
	return append(append(a, c.backendArgs(addrs)...), "-election", election)
}

// backendArgs returns the candidate's flags naming its backend, reached
// through the proxies at addrs: -driver and -addrs, or for kube -url with
// Config.KubeURL's host replaced by the proxy's (the URL carries the CA,
// the token file and the namespace).
func (c *campaign) backendArgs(addrs []string) []string {
	if c.cfg.Driver != "kube" {
		return []string{"-driver", c.cfg.Driver, "-addrs", strings.Join(addrs, ",")}
	}
	u, err := url.Parse(c.cfg.KubeURL)
	if err != nil {
		return []string{"-url", "kube://invalid"} // the candidate reports it
	}
	u.Host = addrs[0]
	return []string{"-url", u.String()}
}

// storeURL returns the backend URL of driver over addrs.
func storeURL(driver string, addrs []string) string {
	hosts := strings.Join(addrs, ",")
	switch driver {
	case "redlock":
		// A 300 ms RequestTimeout, as in the partition mode: five
		// processes, two stores and toxiproxy on a shared 2-core host.
		return "redis://" + hosts + "?dial_timeout=200ms&request_timeout=300ms"
	case "etcd":
		return "etcd://" + hosts + "?prefix=" + url.QueryEscape("/elector-chaos/")
	}
	return "zk://" + hosts
}

// migrations returns how many full migrations the runbook completed.
func (c *campaign) migrations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mig.done
}

// setMigration starts migration m on election base-m<m>, every slot in
// phase old.
func (c *campaign) setMigration(base string, m int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mig.n, c.mig.election, c.mig.maxToken = m, fmt.Sprintf("%s-m%d", base, m), 0
	c.mig.phase = make([]migrate.Phase, c.cfg.Candidates+1)
	for s := range c.mig.phase {
		c.mig.phase[s] = migrate.PhaseOld
	}
}

// runbook runs migrations one after the other until the campaign ends:
// every slot starts in phase old; the slots roll one at a time to both,
// then to new; once a term of the new store's epoch began (the marker is
// written), a late replica in phase old must be refused; then the slots
// roll to done.
func (c *campaign) runbook(base string) {
	ctx := c.ctx
	for m := 0; ; m++ {
		if m > 0 {
			c.setMigration(base, m)
			for s := range c.cfg.Candidates {
				if !c.roll(ctx, s, migrate.PhaseOld) {
					return
				}
			}
		}
		for _, ph := range []migrate.Phase{migrate.PhaseBoth, migrate.PhaseNew} {
			for s := range c.cfg.Candidates {
				if !c.roll(ctx, s, ph) {
					return
				}
			}
		}
		if !c.awaitMarker(ctx) || !c.lateReplica(ctx, m) {
			return
		}
		for s := range c.cfg.Candidates {
			if !c.roll(ctx, s, migrate.PhaseDone) {
				return
			}
		}
		if !c.cleanUp(ctx, m) {
			return
		}
		c.mu.Lock()
		c.mig.done++
		c.mu.Unlock()
		c.cfg.Logf("chaos: %s: migration %d done and cleaned up", c.cfg.Name, m)
	}
}

// roll restarts slot s's process in phase ph: SIGTERM (it resigns), then,
// once the slot runs a new process, waits for a leader and a quiet spell.
// It reports false when the campaign ended.
func (c *campaign) roll(ctx context.Context, s int, ph migrate.Phase) bool {
	c.mu.Lock()
	c.mig.phase[s] = ph
	old := c.running[s]
	c.mu.Unlock()
	if old != nil {
		c.signal(old, syscall.SIGTERM, "")
	}
	for {
		c.mu.Lock()
		cur := c.running[s]
		c.mu.Unlock()
		if cur != old {
			break
		}
		if !wait.Sleep(ctx, 10*time.Millisecond) {
			return false
		}
	}
	c.awaitLeader(ctx, c.cfg.Bound)
	return wait.Sleep(ctx, c.cfg.TTL/2+rand.N(c.cfg.TTL/2))
}

// awaitMarker waits until a term with a token of the new store's epoch
// began: the marker is on the old store. Rolling on to done before that
// would be refused (as migrate documents), so it waits as long as the
// campaign runs, logging every 3 recovery bounds; it reports false when
// the campaign ended.
func (c *campaign) awaitMarker(ctx context.Context) bool {
	began := time.Now()
	next := 3 * c.cfg.Bound
	for {
		c.mu.Lock()
		epoch, _ := migrate.SplitToken(c.mig.maxToken)
		c.mu.Unlock()
		if epoch >= 1 {
			return true
		}
		if time.Since(began) > next {
			c.cfg.Logf("chaos: %s: no term of the new epoch yet after %v", c.cfg.Name, next)
			next += 3 * c.cfg.Bound
		}
		if !wait.Sleep(ctx, 10*time.Millisecond) {
			return false
		}
	}
}

// lateReplica starts a replica in phase old on the migrated election and
// waits up to the recovery bound for it to be refused (it exits); one still
// running then is stopped, and the checker reports it.
func (c *campaign) lateReplica(ctx context.Context, m int) bool {
	s := c.cfg.Candidates
	addrs := c.listenAddrs(s)
	c.mu.Lock()
	election := c.mig.election
	c.mu.Unlock()
	p, err := c.spawn(fmt.Sprintf("s%dm%dlate", s, m), election, addrs)
	if err != nil {
		return false
	}
	select {
	case <-p.done:
	case <-time.After(c.cfg.Bound):
		c.signal(p, syscall.SIGTERM, "")
		<-p.done
	case <-ctx.Done():
		return false
	}
	return true
}

// cleanUp runs runbook step 4 for migration m: a candidate process in
// cleanup mode calls Cleanup through a migrate+done URL and checks that
// the old store names no holder afterwards. It retries while the nemesis
// may hold the old store down, up to three recovery bounds, then records
// the failure for the campaign. It reports false when the campaign ended.
func (c *campaign) cleanUp(ctx context.Context, m int) bool {
	s := c.cfg.Candidates
	addrs := c.listenAddrs(s)
	c.mu.Lock()
	c.mig.phase[s] = migrate.PhaseDone
	election := c.mig.election
	c.mu.Unlock()
	args := append(c.args(fmt.Sprintf("s%dm%dcleanup", s, m), election, addrs), "-cleanup")
	deadline := time.Now().Add(3 * c.cfg.Bound)
	for {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.Bound)
		out, err := exec.CommandContext(cctx, c.cfg.Binary, args...).CombinedOutput()
		cancel()
		switch {
		case err == nil:
			c.mu.Lock()
			c.mig.cleaned++
			c.mu.Unlock()
			return true
		case ctx.Err() != nil:
			return false
		case time.Now().After(deadline):
			c.mu.Lock()
			c.mig.cleanErr = append(c.mig.cleanErr, fmt.Errorf("migration %d: cleanup: %w: %s", m, err, bytes.TrimSpace(out)))
			c.mu.Unlock()
			return true
		}
		if !wait.Sleep(ctx, c.cfg.TTL) {
			return false
		}
	}
}

// cleanupErr returns the runbook's step 4 failures, if any.
func (c *campaign) cleanupErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.mig.cleanErr...)
}

// IsLate reports whether a process is a migrate campaign's late old-only
// replica, which must be refused.
func IsLate(proc string) bool { return strings.HasSuffix(proc, "late") }
