//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/wait"
)

// probeEvery is how often elect watch reads the leader beside the
// backend's watch, to notice that it can no longer see the backend: a
// watch stream that reconnects in silence would otherwise keep the last
// leader on screen after that leader stepped down.
const probeEvery = time.Second

func watchMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseStatus("watch", watchHead, args, stdout)
	if err != nil {
		return err
	}
	log := c.logger(stderr)
	b, closer, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer closer.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	v := &view{w: stdout, c: c}
	v.reg, _ = b.(backend.Registry)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if err := v.probe(ctx, b); err != nil {
			cancel(err)
		}
	})
	wa, ok := b.(backend.Watcher)
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if ok {
			err = wa.Watch(ctx, c.election, v.report)
		} else {
			err = poll(ctx, b, c.election, v.report)
		}
		if ctx.Err() != nil {
			break
		}
		if err := v.failed(err); err != nil {
			return err
		}
		if backend.IsPermanent(err) {
			return exitf(exitBackend, "watch: %v", err)
		}
		delay := min(time.Duration(attempt+1)*250*time.Millisecond, 5*time.Second)
		log.Warn("watch failed; retrying", "error", err, "retry_in", delay)
		wait.Sleep(ctx, delay)
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, ctx.Err()) {
		return err // the probe's usage error
	}
	return nil
}

// view is what elect watch has printed: the last leader, or that the
// leader is unknown while the backend cannot be read.
type view struct {
	w   io.Writer
	c   *statusConfig
	reg backend.Registry // the candidates' registry, to tell a yield; nil without one

	mu    sync.Mutex
	shown bool           // a line was printed
	last  backend.Holder // the last leader printed, without its TTL
	blind bool           // the last line said the leader is unknown
	seen  bool           // some read succeeded
	prev  backend.Holder // the last leader printed that was not "none"
}

// report prints h when it differs from what was printed last, saying so
// when the previous leader yielded to it.
func (v *view) report(h backend.Holder) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seen = true
	ttl := h.TTL
	h.TTL = 0 // a changing TTL is not a change of leader
	if v.shown && !v.blind && h == v.last {
		return
	}
	v.shown, v.blind, v.last = true, false, h
	var y *yieldJSON
	if !h.IsZero() {
		if !v.prev.IsZero() && v.prev.Identity != h.Identity {
			y = v.yielded(v.prev.Identity, h.Identity)
		}
		v.prev = h
	}
	h.TTL = ttl
	printStatus(v.w, v.c, h, nil, y, true)
}

// yielded reads the registry and reports whether from, the previous
// leader, yielded to to: from is still a live candidate and to's priority
// is higher (a leader that yields stays a candidate; one that stopped
// withdrew its entry). It returns nil when not, or when the registry
// cannot be read in time.
func (v *view) yielded(from, to string) *yieldJSON {
	if v.reg == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeEvery)
	defer cancel()
	list, err := v.reg.Entries(ctx, v.c.election)
	if err != nil {
		return nil
	}
	var a, b *backend.Entry
	for i := range list {
		switch en := &list[i]; en.Identity {
		case from:
			a = en
		case to:
			b = en
		}
	}
	if a == nil || b == nil || b.Priority <= a.Priority {
		return nil
	}
	return &yieldJSON{From: a.Identity, FromPriority: a.Priority, Priority: b.Priority}
}

// failed records that a read or the watch failed with err: the leader is
// unknown until the next report. It returns the usage error that ends
// elect watch when the backend refuses elect's credentials or permissions
// before any read succeeded.
func (v *view) failed(err error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.seen && usageError(err) {
		return requestFailed(context.Background(), "watch", err, 0, "")
	}
	if !v.blind {
		v.blind = true
		printUnknown(v.w, v.c, err)
	}
	return nil
}

// probe reads the leader every probeEvery, each read bounded by
// probeEvery, until ctx ends; a failed read makes the leader unknown, a
// successful one reports it. It returns only the error of failed.
func (v *view) probe(ctx context.Context, b backend.Backend) error {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, probeEvery)
		h, err := b.Leader(rctx, v.c.election)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, backend.ErrNoLeader):
			v.report(backend.Holder{})
		case err != nil:
			if err := v.failed(err); err != nil {
				return err
			}
		default:
			v.report(h)
		}
	}
}

// printUnknown prints that the leader is unknown because of err.
func printUnknown(w io.Writer, c *statusConfig, err error) {
	now := time.Now()
	if c.json {
		printJSON(w, holderJSON{Time: now.UTC().Format(time.RFC3339Nano), Election: c.election, Unknown: true, Error: forUser(err.Error())})
		return
	}
	fmt.Fprintf(w, "%s leader of %q unknown: cannot read the backend: %s\n", now.Format(time.RFC3339), c.election, forUser(err.Error()))
}

// poll reports the leader once a second, for a backend without Watch.
func poll(ctx context.Context, b backend.Backend, election string, fn func(backend.Holder)) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		h, err := b.Leader(ctx, election)
		switch {
		case errors.Is(err, backend.ErrNoLeader):
			fn(backend.Holder{})
		case err != nil:
			return err
		default:
			fn(h)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
