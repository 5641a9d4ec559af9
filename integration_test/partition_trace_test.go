package integration_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/partition"
)

// partTrace timestamps, per member and partition, the steps of every
// hand-over of a benchmark: the member list change seen by each member, the
// old owner's revocation, its OnAssigned returning, its release done, the new
// owner's campaign start and win. It shows where a rebalance's time goes.
type partTrace struct {
	mu     sync.Mutex
	events map[traceKey][]time.Time // per member, partition and step
	seen   map[string][]time.Time   // per member: member list changes applied
	logs   map[string][]traceLog    // per member: other steps of interest
}

type traceKey struct {
	id   string
	p    int
	step string
}

type traceLog struct {
	at  time.Time
	msg string
}

// The steps of a hand-over.
const (
	stepEnded    = "ended"    // the old owner cancelled OnAssigned's ctx
	stepReturned = "returned" // the old owner's OnAssigned returned
	stepReleased = "released" // the old owner's release is done
	stepCampaign = "campaign" // the new owner started the campaign it won
	stepElected  = "elected"  // the new owner won
)

func newPartTrace() *partTrace {
	return &partTrace{events: map[traceKey][]time.Time{}, seen: map[string][]time.Time{}, logs: map[string][]traceLog{}}
}

// options wraps opts (from a partLedger) to record id's steps.
func (t *partTrace) options(id string, opts *partition.Options) *partition.Options {
	o := *opts
	assigned := o.OnAssigned
	o.OnAssigned = func(ctx context.Context, a partition.Assignment) {
		assigned(ctx, a)
		t.add(id, a.Partition, stepReturned, time.Now())
	}
	o.Observer = func(ev elector.Event) {
		now := time.Now()
		p := partitionOf(ev.Election)
		if p < 0 {
			return
		}
		switch ev.Kind {
		case elector.EventCampaign:
			if ev.Err == nil {
				t.add(id, p, stepCampaign, now.Add(-ev.Took))
			}
		case elector.EventElected:
			t.add(id, p, stepElected, now)
		case elector.EventEnded:
			t.add(id, p, stepEnded, now)
		case elector.EventRelease:
			t.add(id, p, stepReleased, now)
		}
	}
	o.Logger = slog.New(&traceHandler{Handler: o.Logger.Handler(), t: t, id: id})
	return &o
}

func partitionOf(election string) int {
	i := strings.LastIndexByte(election, '/')
	var p int
	if _, err := fmt.Sscanf(election[i+1:], "%d", &p); err != nil || strings.HasSuffix(election[:max(i, 0)], "/m") {
		return -1
	}
	return p
}

func (t *partTrace) add(id string, p int, step string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := traceKey{id, p, step}
	t.events[k] = append(t.events[k], at)
}

// first returns the first time of k at or after since, or the zero time.
func (t *partTrace) first(k traceKey, since time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, at := range t.events[k] {
		if !at.Before(since) {
			return at
		}
	}
	return time.Time{}
}

// firstLog returns when id first logged msg at or after since.
func (t *partTrace) firstLog(id, msg string, since time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.logs[id] {
		if strings.HasPrefix(l.msg, msg) && !l.at.Before(since) {
			return l.at
		}
	}
	return time.Time{}
}

// report logs, for the hand-overs of one rebalance that began at start and
// moved partitions from before[p] to after[p], the distribution of each
// step's time since start.
func (t *partTrace) report(tb testing.TB, what string, start time.Time, took time.Duration, before, after []string) {
	steps := []string{"list seen by old", stepEnded, stepReturned, stepReleased, "list seen by new", stepCampaign, stepElected}
	at := map[string]latencies{}
	for p := range before {
		if before[p] == after[p] {
			continue
		}
		old, nu := before[p], after[p]
		for _, s := range steps {
			var w time.Time
			switch s {
			case "list seen by old":
				w = t.firstLog(old, "members changed", start)
			case "list seen by new":
				w = t.firstLog(nu, "members changed", start)
			case stepEnded, stepReturned, stepReleased:
				w = t.first(traceKey{old, p, s}, start)
			default:
				w = t.first(traceKey{nu, p, s}, start)
			}
			if !w.IsZero() {
				at[s] = append(at[s], w.Sub(start))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s took %v; %d partitions moved; ms since the change (n p0 p50 p90 max):", what, took.Round(time.Millisecond), diff(before, after))
	for _, s := range steps {
		ls := at[s]
		if len(ls) == 0 {
			fmt.Fprintf(&b, "\n  %-18s none", s)
			continue
		}
		slices.Sort(ls)
		ms := func(q float64) int64 { return ls[int(q*float64(len(ls)-1))].Milliseconds() }
		fmt.Fprintf(&b, "\n  %-18s %4d %6d %6d %6d %6d", s, len(ls), ms(0), ms(0.5), ms(0.9), ms(1))
	}
	t.mu.Lock()
	for _, id := range slices.Sorted(maps.Keys(t.logs)) {
		var line []string
		for _, l := range t.logs[id] {
			if !l.at.Before(start) && l.at.Sub(start) < took+time.Second {
				line = append(line, fmt.Sprintf("%d:%s", l.at.Sub(start).Milliseconds(), l.msg))
			}
		}
		if len(line) > 0 {
			if len(line) > 12 {
				line = append(line[:12], fmt.Sprintf("… %d more", len(line)-12))
			}
			fmt.Fprintf(&b, "\n  %s: %s", id, strings.Join(line, ", "))
		}
	}
	t.mu.Unlock()
	tb.Log(b.String())
}

// traceHandler records the log messages of interest, then passes every
// record on.
type traceHandler struct {
	slog.Handler
	t  *partTrace
	id string
}

func (h *traceHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case "members changed", "joined", "left", "read the holders", "campaign failed; retrying", "membership lost; rejoining", "probe DEBUG":
		msg := r.Message
		if r.Message == "read the holders" || r.Message == "probe DEBUG" {
			r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
		}
		h.t.mu.Lock()
		h.t.logs[h.id] = append(h.t.logs[h.id], traceLog{r.Time, msg})
		h.t.mu.Unlock()
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

func (h *traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &traceHandler{Handler: h.Handler.WithAttrs(as), t: h.t, id: h.id}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	return &traceHandler{Handler: h.Handler.WithGroup(name), t: h.t, id: h.id}
}
