package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Config describes one campaign: one driver in one mode, its candidates,
// and how long the nemesis works on it.
type Config struct {
	// Name names the campaign in the report, e.g. "redlock-aof".
	Name string
	// Driver is the candidate's -driver: redlock, etcd, zookeeper or kube.
	Driver string
	// ServerKind is the scripts/servers.sh kind of the backend: redis, etcd,
	// zk or kube. Addrs are its nodes' addresses; Addrs[i] is node i+1.
	ServerKind string
	// Addrs are the backend's node addresses; Addrs[i] is servers.sh node
	// FirstNode+i.
	Addrs []string
	// FirstNode is the servers.sh number of Addrs[0]; 0 means 1 (ZooKeeper's
	// stock-timing ensemble is nodes 5-7).
	FirstNode int
	// SyncWindow is the ZooKeeper ensemble's syncLimit × tickTime: the
	// pause-store-leader fault stops its leader for less than that, so
	// that the followers ride it out.
	SyncWindow time.Duration
	// Script is the path of scripts/servers.sh.
	Script string
	// Binary is the path of the built ./candidate program.
	Binary string
	// AOF makes Redis nodes run (and restart) with appendfsync always;
	// without it they restart empty.
	AOF bool
	// Clock runs the Redis nodes under the clock shim (clock.go), and
	// restarts them without it at the end.
	Clock bool
	// Candidates is the number of candidate processes (slots).
	Candidates int
	// TTL is the lease TTL (ZooKeeper: session timeout).
	TTL time.Duration
	// Bound is the recovery bound passed to [Check].
	Bound time.Duration
	// Seed seeds the nemesis's schedule.
	Seed uint64
	// MinFaults and MinTerms: the campaign runs until both that many
	// faults were injected and that many terms began, or MaxDuration
	// passed.
	MinFaults, MinTerms int
	// MaxDuration bounds the campaign's fault schedule.
	MaxDuration time.Duration
	// Faults lists the fault kinds to draw from; nil means [FaultKinds].
	Faults []string
	// Mode is "" (one election), [ModePartitions] or [ModeMigrate]; see
	// modes.go. Partitions is the partition mode's number of partitions;
	// Migrations the least number of full migrations a migrate campaign
	// runs; OldDriver, OldKind and OldAddrs name the store a migrate
	// campaign moves from (Driver, ServerKind and Addrs name the new one,
	// whose nodes the nemesis hits).
	Mode               string
	Partitions         int
	Migrations         int
	OldDriver, OldKind string
	OldAddrs           []string
	// UnderKind and UnderAddrs name the store the backend's servers keep
	// their data in, whose nodes the [UnderPrefix] fault kinds hit: for a
	// kube campaign, the etcd cluster under the kube-apiserver.
	UnderKind  string
	UnderAddrs []string
	// KubeURL is the kube:// URL of the apiserver (Addrs[0]) for a kube
	// campaign; each candidate reaches it through its own proxy.
	KubeURL string
	// Dir receives the candidates' standard error, one file per process.
	Dir string
	// Logf logs progress.
	Logf func(format string, args ...any)
}

// campaign is the state of a running campaign.
type campaign struct {
	cfg     Config
	hist    *History
	fence   *Fence
	proxies [][]*toxiproxy.Proxy // [slot][node]
	ctx     context.Context

	mu      sync.Mutex
	leading map[leadKey]int64 // proc and key → mono of its elected event, while it leads
	running map[int]*proc     // slot → its current process
	elected int
	prio    map[string]int // proc → its priority, in a priority campaign
	mig     migration      // the migrate mode's runbook state
	wg      sync.WaitGroup
}

// leadKey names one process's term in one election (key "" in a campaign of
// one election).
type leadKey struct{ proc, key string }

// proc is one candidate process.
type proc struct {
	name     string
	cmd      *exec.Cmd
	signaled bool // the nemesis or shutdown signalled it: its exit is expected
	done     chan struct{}
}

// Run runs one campaign and returns its history. It restores every backend
// node it touched (resumed, restarted) before it returns, even on error.
func Run(ctx context.Context, cfg Config) (events []Event, err error) {
	if cfg.Faults == nil {
		cfg.Faults = FaultKinds(cfg.ServerKind, cfg.AOF)
	}
	c := &campaign{cfg: cfg, hist: &History{}, leading: map[leadKey]int64{}, running: map[int]*proc{}, prio: map[string]int{}}
	defer func() {
		if rerr := c.restoreNodes(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if cfg.ServerKind == "redis" {
		// Start from nodes in the campaign's persistence mode.
		for n := range cfg.Addrs {
			if err := c.servers("restart", "redis", fmt.Sprint(n+1), aofFlag(cfg.AOF), clockFlag(cfg.Clock)); err != nil {
				return nil, err
			}
		}
	}
	if cfg.OldKind == "redis" {
		// A migrate campaign's old Redis nodes keep the marker across the
		// nemesis's restarts only with AOF.
		for n := range cfg.OldAddrs {
			if err := c.servers("restart", "redis", fmt.Sprint(n+1), "--aof"); err != nil {
				return nil, err
			}
		}
	}
	if c.fence, err = StartFence(c.hist); err != nil {
		return nil, err
	}
	defer c.fence.Close()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	for s := range cfg.Candidates + 1 { // the last slot: a migrate campaign's late replica
		var row []*toxiproxy.Proxy
		for n, addr := range append(slices.Clone(cfg.Addrs), cfg.OldAddrs...) {
			p := toxiproxy.NewProxy(srv, fmt.Sprintf("s%d-n%d", s, n+1), "127.0.0.1:0", addr)
			if err := p.Start(); err != nil {
				return nil, err
			}
			defer p.Stop()
			row = append(row, p)
		}
		c.proxies = append(c.proxies, row)
	}

	runCtx, stop := context.WithCancel(ctx)
	c.ctx = runCtx
	election := fmt.Sprintf("chaos/%s-%d-%d", cfg.Name, cfg.Seed, time.Now().UnixNano())
	if cfg.Mode == ModeMigrate {
		c.setMigration(election, 0)
	}
	for s := range cfg.Candidates {
		c.wg.Go(func() { c.slot(s, election) })
	}
	c.wg.Go(func() { c.probeStore(runCtx) })
	if cfg.Mode == ModeMigrate {
		c.wg.Go(func() { c.runbook(election) })
	}
	nerr := c.nemesis(runCtx)
	stop()
	c.shutdown()
	c.wg.Wait()
	return c.hist.Events(), errors.Join(nerr, c.cleanupErr())
}

// first returns the servers.sh number of the backend's first node.
func (c *campaign) first() int { return max(c.cfg.FirstNode, 1) }

func aofFlag(aof bool) string {
	if aof {
		return "--aof"
	}
	return ""
}

// servers runs scripts/servers.sh with args (empty ones dropped).
func (c *campaign) servers(args ...string) error {
	var a []string
	for _, s := range args {
		if s != "" {
			a = append(a, s)
		}
	}
	out, err := exec.Command(c.cfg.Script, a...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("servers.sh %s: %w\n%s", strings.Join(a, " "), err, out)
	}
	return nil
}

// restoreNodes resumes every backend node (a migrate campaign's old
// store's too) and starts any that is down (servers.sh start waits until
// the kind is ready); Redis nodes are restarted without AOF if the campaign
// used it, as the other tests expect.
func (c *campaign) restoreNodes() error {
	var errs []error
	if c.cfg.UnderKind != "" { // first: the backend's servers need it
		errs = c.restoreKind(c.cfg.UnderKind, 1, len(c.cfg.UnderAddrs), true)
	}
	errs = append(errs, c.restoreKind(c.cfg.ServerKind, c.first(), len(c.cfg.Addrs), c.cfg.AOF || c.cfg.Clock)...)
	if c.cfg.OldKind != "" {
		errs = append(errs, c.restoreKind(c.cfg.OldKind, 1, len(c.cfg.OldAddrs), true)...)
	}
	return errors.Join(errs...)
}

// restoreKind restores the n nodes of serverKind numbered from first;
// persisted reports whether Redis nodes ran with AOF or the clock shim.
func (c *campaign) restoreKind(serverKind string, first, n int, persisted bool) []error {
	var errs []error
	for i := range n {
		node := fmt.Sprint(first + i)
		_ = c.servers("resume", serverKind, node)
		if serverKind == "redis" && persisted {
			errs = append(errs, c.servers("restart", "redis", node))
		}
	}
	return append(errs, c.servers("start", serverKind))
}

// listenAddrs returns the addresses of slot s's proxies, one per backend
// node (a migrate campaign's new store's first, then the old store's).
func (c *campaign) listenAddrs(s int) []string {
	addrs := make([]string, len(c.proxies[s]))
	for n, p := range c.proxies[s] {
		addrs[n] = p.Listen
	}
	return addrs
}

// slot keeps one candidate process running in slot s until the campaign
// ends, starting a new one (a new generation) whenever it dies.
func (c *campaign) slot(s int, election string) {
	addrs := c.listenAddrs(s)
	for gen := 0; c.ctx.Err() == nil; gen++ {
		p, err := c.spawn(fmt.Sprintf("s%dg%d", s, gen), election, addrs)
		if err != nil {
			c.cfg.Logf("chaos: %s: start candidate: %v", c.cfg.Name, err)
			return
		}
		began := time.Now()
		<-p.done
		if time.Since(began) < time.Second && c.ctx.Err() == nil {
			select { // it died young on its own: do not spin
			case <-time.After(500 * time.Millisecond):
			case <-c.ctx.Done():
			}
		}
	}
}

// spawn starts candidate process name and a goroutine that feeds its
// events into the history.
func (c *campaign) spawn(name, election string, addrs []string) (*proc, error) {
	cfg := c.cfg
	cmd := exec.Command(cfg.Binary, c.args(name, election, addrs)...)
	stderr, err := os.Create(filepath.Join(cfg.Dir, cfg.Name+"-"+name+".stderr"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = stderr.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		_ = stderr.Close()
		return nil, c.ctx.Err()
	}
	if err := cmd.Start(); err != nil {
		c.mu.Unlock()
		_ = stderr.Close()
		return nil, err
	}
	var slot int
	_, _ = fmt.Sscanf(name, "s%d", &slot)
	c.running[slot] = p
	c.mu.Unlock()
	c.wg.Go(func() {
		defer close(p.done)
		defer stderr.Close()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ev, ok := c.hist.AddLine(sc.Bytes())
			if !ok {
				continue
			}
			c.mu.Lock()
			switch ev.Kind {
			case KindStart:
				if prio, ok := startPriority(ev); ok {
					c.prio[ev.Proc] = prio
				}
			case KindElected:
				c.leading[leadKey{ev.Proc, ev.Key}] = ev.Mono
				c.elected++
				c.mig.maxToken = max(c.mig.maxToken, ev.Token)
			case KindStepdown:
				delete(c.leading, leadKey{ev.Proc, ev.Key})
			}
			c.mu.Unlock()
		}
		werr := cmd.Wait()
		c.mu.Lock()
		c.dropLeading(name)
		signaled := p.signaled
		c.mu.Unlock()
		if !signaled {
			c.hist.Add(Event{Mono: Mono(), Proc: name, Kind: KindExit, Note: fmt.Sprint(werr)})
			if werr != nil || cfg.Mode != ModePriority { // a priority candidate leaves and exits 0
				c.cfg.Logf("chaos: %s: candidate %s exited on its own: %v", cfg.Name, name, werr)
			}
		}
	})
	return p, nil
}

// leader returns the process that was elected last among those leading, or
// nil.
func (c *campaign) leader() *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best string
	var at int64
	for k, t := range c.leading {
		if t > at {
			best, at = k.proc, t
		}
	}
	for _, p := range c.running {
		if p.name == best {
			return p
		}
	}
	return nil
}

// signal sends sig to p and records kind, unless p has exited.
func (c *campaign) signal(p *proc, sig syscall.Signal, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		p.signaled = true
	}
	if sig == syscall.SIGKILL {
		c.dropLeading(p.name)
	}
	// A pause or kill is stamped once the signal has acted (see
	// signalled); a resume before it is sent.
	halts := sig == syscall.SIGSTOP || sig == syscall.SIGKILL
	if kind != "" && !halts {
		c.hist.Add(Event{Mono: Mono(), Proc: p.name, Kind: kind})
	}
	err := p.cmd.Process.Signal(sig)
	if err == nil {
		err = signalled(p.cmd.Process.Pid, sig)
	}
	if err != nil {
		c.cfg.Logf("chaos: %s: %v to %s: %v", c.cfg.Name, sig, p.name, err)
	}
	if kind != "" && halts {
		c.hist.Add(Event{Mono: Mono(), Proc: p.name, Kind: kind})
	}
}

// shutdown stops every candidate: SIGCONT, SIGTERM, and SIGKILL for any
// still running after 10 s.
func (c *campaign) shutdown() {
	c.mu.Lock()
	procs := make([]*proc, 0, len(c.running))
	for _, p := range c.running {
		procs = append(procs, p)
	}
	c.mu.Unlock()
	for _, p := range procs {
		c.signal(p, syscall.SIGCONT, "")
		c.signal(p, syscall.SIGTERM, "")
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			c.signal(p, syscall.SIGKILL, KindKill)
			<-p.done
		}
	}
}

// dropLeading forgets every term of proc; c.mu is held.
func (c *campaign) dropLeading(proc string) {
	for k := range c.leading {
		if k.proc == proc {
			delete(c.leading, k)
		}
	}
}

// owned returns how many elections (partitions) have a leader.
func (c *campaign) owned() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := map[string]bool{}
	for k := range c.leading {
		keys[k.key] = true
	}
	return len(keys)
}

// terms returns how many terms began so far.
func (c *campaign) terms() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elected
}
