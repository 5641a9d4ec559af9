//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/promelector"
)

const runHead = `Usage: elect run [flags] -- COMMAND [ARGS...]

Campaign for the election and, while leading, run COMMAND. When the term
ends (the lease is lost or cannot be renewed, or elect is stopped), each
process of COMMAND's tree gets one SIGTERM, then SIGKILL after --grace. If the lease is lost
rather than given up, the grace is cut short so that COMMAND is dead before
the lease can expire at the backend: at most half of --safety-margin.

COMMAND runs in its own process group, with the term in its environment:
ELECT_TERM_ELECTION, ELECT_TERM_IDENTITY, ELECT_TERM_TOKEN (the fencing
token: pass it with every write) and ELECT_TERM_START. Every other ELECT_*
variable is removed from it (they may hold credentials). SIGHUP, SIGUSR1, SIGUSR2 and SIGWINCH are
forwarded to COMMAND; SIGINT and SIGTERM stop elect (a second one kills
COMMAND at once). On Linux, if elect itself is killed (even by SIGKILL),
every process COMMAND started dies with it, setsid'd ones included.

When COMMAND exits on its own while leading, --on-exit decides:
  exit     give the lease up and exit with COMMAND's status (the default)
  restart  run it again after --restart-delay, still leading
  resign   give the lease up and campaign again; run it when re-elected
After a lost term, COMMAND runs again whenever this replica is re-elected.

With --once (for cron), COMMAND runs at most once across the replicas for
one firing: if another replica leads, or wins within --wait, elect exits 0
without running it. The winner runs COMMAND, keeps the lease for --hold
after it finishes (so that a replica fired a little later cannot run it
again; --hold must be at least --wait), then exits with COMMAND's status.

Example (crontab, on every replica):
  */5 * * * * elect run --once --backend etcd://e1,e2,e3 --election invoices -- /usr/local/bin/send-invoices
`

// runConfig holds the settings of elect run.
type runConfig struct {
	common
	identity      string
	ttl           time.Duration
	renewInterval time.Duration
	safetyMargin  time.Duration
	priority      int
	minTerm       time.Duration
	grace         time.Duration
	onExit        string
	restartDelay  time.Duration
	once          bool
	hold          time.Duration
	wait          time.Duration
	metricsAddr   string
	argv          []string
}

func runFlags(c *runConfig) *flag.FlagSet {
	fs := newFlagSet("run")
	c.register(fs)
	fs.StringVar(&c.identity, "identity", "", "`identity` reported to others while leading (default hostname-pid-random)")
	durationVar(fs, &c.ttl, "ttl", 0, "lease `TTL`: another replica takes over about this long after a crash (default 15s)")
	durationVar(fs, &c.renewInterval, "renew-interval", 0, "time between renewals (default TTL/3)")
	durationVar(fs, &c.safetyMargin, "safety-margin", 0, "step down this long before the lease's deadline if renewals fail (default TTL/5)")
	intVar(fs, &c.priority, "priority", 0, "preference `N` >= 0: a leader of a lower priority hands over to this replica, and lower ones stand aside (0: none; redis, etcd and zk)")
	durationVar(fs, &c.minTerm, "min-term", 0, "with --priority: lead at least this long before handing over to a higher priority")
	durationVar(fs, &c.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when COMMAND is stopped")
	fs.StringVar(&c.onExit, "on-exit", "exit", "`policy` when COMMAND exits while leading: exit, restart or resign")
	durationVar(fs, &c.restartDelay, "restart-delay", time.Second, "pause before --on-exit=restart runs COMMAND again")
	boolVar(fs, &c.once, "once", false, "run COMMAND at most once across the replicas (for cron)")
	durationVar(fs, &c.hold, "hold", 10*time.Second, "with --once: keep the lease this long after COMMAND finishes")
	durationVar(fs, &c.wait, "wait", 5*time.Second, "with --once: give up if not elected within this time")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve /metrics (Prometheus) and /healthz on this `host:port`")
	return fs
}

func (c *runConfig) check() error {
	if err := c.common.check(); err != nil {
		return err
	}
	for name, d := range map[string]time.Duration{"grace": c.grace, "restart-delay": c.restartDelay, "hold": c.hold, "wait": c.wait} {
		if d < 0 {
			return fmt.Errorf("--%s is %v; want a duration >= 0", name, d)
		}
	}
	switch {
	case c.priority < 0:
		return fmt.Errorf("--priority is %d; want 0 (no preference) or more", c.priority)
	case c.minTerm < 0:
		return fmt.Errorf("--min-term is %v; want a duration >= 0", c.minTerm)
	case c.minTerm > 0 && c.priority == 0:
		return errors.New("--min-term is set without --priority; it applies only to a replica with a priority")
	case c.onExit != "exit" && c.onExit != "restart" && c.onExit != "resign":
		return fmt.Errorf("--on-exit %q: want exit, restart or resign", c.onExit)
	case c.once && c.wait == 0:
		return errors.New("--wait is 0; --once needs a positive time to wait for the election")
	case c.once && c.hold < c.wait:
		return fmt.Errorf("--hold %v is shorter than --wait %v: a replica still waiting could win after the lease is given up and run COMMAND again; want --hold >= --wait", c.hold, c.wait)
	case len(c.argv) == 0:
		return errors.New("no command: want elect run [flags] -- COMMAND [ARGS...]")
	}
	return nil
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := new(runConfig)
	fs := runFlags(c)
	if err := parse(fs, args, stdout, runHead); err != nil {
		return err
	}
	c.argv = fs.Args()
	if err := c.check(); err != nil {
		return exitf(exitUsage, "run: %v", err)
	}
	// Find the command before campaigning: no point leading without it.
	path, err := exec.LookPath(c.argv[0])
	if err != nil {
		code := exitCannotRun
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = exitNotFound
		}
		return exitf(code, "run: %v", err)
	}
	c.argv[0] = path
	log := c.logger(stderr)
	octx, cancel := ctx, context.CancelFunc(func() {})
	if c.once { // --wait bounds reaching a backend that is down, too
		octx, cancel = context.WithTimeout(ctx, c.wait)
	}
	b, closer, err := c.open(octx)
	cancel()
	if err != nil {
		return err
	}
	defer closer.Close()

	r := &runner{cfg: c, log: log}
	metrics := promelector.New(nil)
	r.e, err = elector.New(b, c.election, &elector.Options{
		Identity:       c.identity,
		TTL:            c.ttl,
		RenewInterval:  c.renewInterval,
		SafetyMargin:   c.safetyMargin,
		Priority:       c.priority,
		MinTerm:        c.minTerm,
		OnElected:      r.onElected,
		OnLeaderChange: r.onLeaderChange,
		Observer: func(ev elector.Event) {
			metrics.Observe(ev)
			r.observe(ev)
		},
		Logger: log,
	})
	if err != nil {
		return exitf(exitUsage, "run: %v", err)
	}
	if err := checkRate(b, r.e.Options()); err != nil {
		return exitf(exitUsage, "run: %v", err)
	}
	metrics.Track(r.e)
	if c.metricsAddr != "" {
		srv, err := serveMetrics(c.metricsAddr, metrics, r.e, log)
		if err != nil {
			return exitf(exitUsage, "run: --metrics-addr: %v", err)
		}
		defer srv.close()
	}
	return r.run(ctx)
}

// checkRate refuses a client rate limit (a kube:// URL's qps) too low to
// renew the lease: each renewal interval needs the renewal and room for
// one more request (a retry, or a read of the leader), or every term is
// lost to renewals waiting on the limiter.
func checkRate(b backend.Backend, o elector.Options) error {
	var rl interface{ RequestRate() float64 }
	if !backend.As(b, &rl) {
		return nil
	}
	rate := rl.RequestRate()
	if need := 2 / o.RenewInterval.Seconds(); rate > 0 && rate < need {
		return fmt.Errorf("the backend's client sends at most %g requests per second (the URL's qps), fewer than 2 per renewal interval of %v: "+
			"renewals would wait on the limiter until every term is lost; raise the URL's qps to at least %g, or --renew-interval (or --ttl) to at least %v",
			rate, o.RenewInterval, need, time.Duration(2/rate*float64(time.Second)).Round(time.Millisecond))
	}
	return nil
}
