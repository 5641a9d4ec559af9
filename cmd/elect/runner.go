//go:build unix

package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/internal/wait"
)

// onceState is where a --once run stands.
type onceState int

const (
	waiting onceState = iota // campaigning
	elected                  // won: runs the command
	gaveUp                   // another replica leads, or --wait passed
)

// runner runs the elector of elect run and the command of each term.
type runner struct {
	cfg    *runConfig
	log    *slog.Logger
	e      *elector.Elector
	cancel context.CancelFunc // ends e.Run

	mu       sync.Mutex
	child    *child // the running command, for signal forwarding
	code     int    // the exit code decided so far
	stopping bool   // SIGINT or SIGTERM received
	state    onceState
	other    elector.Holder // --once: the replica that leads instead
	lost     error          // --once: why the term was lost (exit 4)
	served   bool           // a campaign succeeded
	refused  error          // the backend refused access before any campaign succeeded
}

// run runs the elector until the command's outcome or a signal ends it,
// and returns the exit status as an error (nil for 0).
func (r *runner) run(ctx context.Context) error {
	ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	sigs := make(chan os.Signal, 4)
	notifyUnlessIgnored(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	var wg sync.WaitGroup
	defer wg.Wait()
	done := make(chan struct{})
	defer close(done)
	wg.Go(func() { r.handleSignals(sigs, done) })
	if r.cfg.once {
		t := time.AfterFunc(r.cfg.wait, r.giveUp)
		defer t.Stop()
	}

	err := r.e.Run(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.refused != nil:
		return requestFailed(ctx, "run", r.refused, 0, "")
	case err != nil && usageError(err): // such as a TTL the backend refuses
		return exitf(exitUsage, "run: %v", err)
	case err != nil && !errors.Is(err, context.Canceled):
		return exitf(exitBackend, "run: %v", err)
	}
	if r.cfg.once && r.state != elected && !r.stopping {
		return r.notElected()
	}
	if r.lost != nil {
		return exitf(exitLost, "run --once: leadership was lost before the command finished (%v); the command was stopped", r.lost)
	}
	if r.code != 0 {
		return &exitError{code: r.code}
	}
	return nil
}

// observe ends the run when the backend refuses elect's credentials or
// permissions before any campaign succeeded: the user must change them
// (exit 2), and retrying cannot help. Later refusals are retried, as
// credentials rotated under a running elect may come back.
func (r *runner) observe(ev elector.Event) {
	if ev.Kind != elector.EventCampaign {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ev.Err == nil:
		r.served = true
	case !r.served && r.refused == nil && refusedAccess(ev.Err):
		r.refused = ev.Err
		r.cancel()
	}
}

// notElected explains why a --once run did not run the command.
func (r *runner) notElected() error {
	h := r.other
	if h.IsZero() {
		// --wait passed: is anyone leading? A last look, short enough
		// that --once ends about --wait after it started.
		ctx, cancel := context.WithTimeout(context.Background(), min(max(r.cfg.wait/10, 100*time.Millisecond), time.Second))
		defer cancel()
		var err error
		switch h, err = r.e.Leader(ctx); {
		case errors.Is(err, elector.ErrNoLeader):
			return exitf(exitNoLeader, "run --once: not elected within --wait %v, and no replica leads", r.cfg.wait)
		case usageError(err):
			return requestFailed(ctx, "run --once", err, 0, "")
		case err != nil:
			return exitf(exitBackend, "run --once: not elected within --wait %v, and no other leader seen: %v", r.cfg.wait, err)
		}
	}
	r.log.Info("another replica leads; not running the command", "leader", h.Identity, "token", h.Token)
	return nil
}

// handleSignals stops elect on SIGINT or SIGTERM (a second one kills the
// command) and forwards the other signals to the command.
func (r *runner) handleSignals(sigs <-chan os.Signal, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case s := <-sigs:
			r.mu.Lock()
			first, ch := !r.stopping, r.child
			if s == syscall.SIGINT || s == syscall.SIGTERM {
				r.stopping = true
			}
			r.mu.Unlock()
			switch {
			case s != syscall.SIGINT && s != syscall.SIGTERM:
				if ch != nil {
					r.log.Debug("forwarding signal", "signal", s)
					ch.signal(s.(syscall.Signal))
				}
			case first:
				r.log.Info("stopping", "signal", s)
				r.cancel()
			case ch != nil:
				r.log.Warn("second stop signal; killing the command", "signal", s)
				ch.signal(syscall.SIGKILL)
			}
		}
	}
}

// giveUp ends a --once campaign that has not won within --wait.
func (r *runner) giveUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == waiting {
		r.state = gaveUp
		r.cancel()
	}
}

// onLeaderChange logs leader changes, and ends a --once campaign as soon
// as another replica leads.
func (r *runner) onLeaderChange(h elector.Holder) {
	if h.IsZero() {
		r.log.Debug("no leader")
		return
	}
	r.log.Debug("leader", "leader", h.Identity, "token", h.Token)
	if !r.cfg.once || h.Identity == r.e.Identity() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == waiting {
		r.state, r.other = gaveUp, h
		r.cancel()
	}
}

// onElected runs the command for one term; see runHead for the policy.
func (r *runner) onElected(ctx context.Context, t elector.Term) {
	if r.cfg.once {
		r.mu.Lock()
		ok := r.state == waiting
		if ok {
			r.state = elected
		}
		r.mu.Unlock()
		if !ok { // gave up at the same moment: leave it to the others
			return
		}
	}
	for ctx.Err() == nil { // the term may end before the command starts
		ch, err := startChild(r.cfg.argv, r.env(t), func() bool { return ctx.Err() == nil })
		if errors.Is(err, errTermOver) {
			r.log.Info("the term ended before the command started; not starting it", "token", t.Token)
			return
		}
		if err != nil {
			r.log.Error("cannot start the command", "error", err)
			r.finish(exitCannotRun)
			return
		}
		r.setChild(ch)
		r.log.Info("command started", "pid", ch.pid, "token", t.Token)
		select {
		case <-ch.done:
			ch.killGroup()
			r.setChild(nil)
			code := ch.code()
			r.log.Info("command exited", "status", code)
			switch {
			case r.cfg.once:
				r.mu.Lock()
				r.code = code
				r.mu.Unlock()
				r.log.Debug("holding the lease", "hold", r.cfg.hold)
				wait.Sleep(ctx, r.cfg.hold)
				r.cancel()
				return
			case r.cfg.onExit == "restart":
				if !wait.Sleep(ctx, r.cfg.restartDelay) {
					return
				}
			case r.cfg.onExit == "resign":
				_ = r.e.Resign(ctx)
				return
			default:
				r.finish(code)
				return
			}
		case <-ctx.Done():
			cause := context.Cause(ctx)
			grace := r.grace(cause)
			r.log.Info("term ended; stopping the command", "reason", cause, "grace", grace)
			ch.stop(grace, r.log)
			r.setChild(nil)
			r.log.Info("command stopped", "status", ch.code())
			if r.cfg.once {
				code := ch.code()
				if errors.Is(cause, elector.ErrLeaseLost) {
					code = exitLost
					r.setLost(cause)
				}
				r.finish(code)
			}
			return
		}
	}
	if cause := context.Cause(ctx); r.cfg.once && errors.Is(cause, elector.ErrLeaseLost) {
		r.setLost(cause) // lost before the command could start
		r.finish(exitLost)
	}
}

// setLost records why a --once term was lost.
func (r *runner) setLost(cause error) {
	r.mu.Lock()
	r.lost = cause
	r.mu.Unlock()
}

// finish records the exit code and ends the run.
func (r *runner) finish(code int) {
	r.mu.Lock()
	r.code = code
	r.mu.Unlock()
	r.cancel()
}

func (r *runner) setChild(c *child) {
	r.mu.Lock()
	r.child = c
	r.mu.Unlock()
}

// grace is the time between SIGTERM and SIGKILL for a term that ended for
// cause: --grace when the lease is still held (elect is stopping, or the
// command exited), but at most half the safety margin when the lease was
// lost, so that the command is dead before the lease can lapse at the
// backend and another replica be elected.
func (r *runner) grace(cause error) time.Duration {
	if !errors.Is(cause, elector.ErrLeaseLost) {
		return r.cfg.grace
	}
	return min(r.cfg.grace, r.e.Options().SafetyMargin/2)
}

// env is the command's environment: elect's, without any ELECT_* variable,
// with the term's ELECT_TERM_* variables.
func (r *runner) env(t elector.Term) []string {
	env := slices.DeleteFunc(os.Environ(), isElectEnv)
	return append(env,
		"ELECT_TERM_ELECTION="+t.Election,
		"ELECT_TERM_IDENTITY="+t.Identity,
		"ELECT_TERM_TOKEN="+strconv.FormatUint(t.Token, 10),
		"ELECT_TERM_START="+t.Start.UTC().Format(time.RFC3339Nano),
	)
}

// notifyUnlessIgnored relays to c those of sigs that the process did not
// start with ignored. A signal ignored at start (nohup ignores SIGHUP; a
// shell ignores SIGINT and SIGQUIT in its background jobs) stays ignored,
// in elect and in the command it runs, as the one who started elect asked:
// os/signal's Notify would install a handler instead, and the command
// would start with the signal's default action.
func notifyUnlessIgnored(c chan<- os.Signal, sigs ...os.Signal) {
	var caught []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			caught = append(caught, s)
		}
	}
	if len(caught) > 0 { // Notify with no signal would relay every signal
		signal.Notify(c, caught...)
	}
}
