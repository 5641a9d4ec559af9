//go:build unix

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/migrate"
)

const statusHead = `Usage: elect status [flags]

Print the current leader of the election: its identity, fencing token and
the time its lease has left (when the backend tells), then each live
candidate that runs with --priority, highest first, and whether it stands
aside. With a migrate+PHASE://
URL, also the phase, whether the "migrated" marker is written, and the
holder on each store (see 'elect help migrate'); the leader is the one a
fence sees in every phase. Exit 0 when there is a leader, 1 when there is
none, 2 for bad flags, a bad URL or credentials or permissions the
backend refuses, 3 when the backend (with a migrate URL: a store the
leader depends on) cannot be reached or does not answer within --timeout.
`

const watchHead = `Usage: elect watch [flags]

Print the leader of the election, then a line each time it changes, until
interrupted (SIGINT or SIGTERM; exit 0). Backend errors are retried; while
the backend cannot be read (the leader is read at least once a second), a
line says the leader is unknown and why ("unknown":true with --json), and
the leader is printed again once it can. A new leader that a leader of a
lower priority yielded to (elect run --priority) is marked so: the line
ends "<old> (priority 1) yielded to priority 5" ("yield" with --json).
Exit 2 when the backend refuses elect's credentials or permissions at the
first read.
`

// statusConfig holds the settings of elect status and elect watch.
type statusConfig struct {
	common
	json    bool
	timeout time.Duration
}

func statusFlags(c *statusConfig, name string) *flag.FlagSet {
	fs := newFlagSet(name)
	c.register(fs)
	boolVar(fs, &c.json, "json", false, "print JSON (one object per line) instead of text")
	if name == "status" { // watch retries until interrupted: no timeout
		durationVar(fs, &c.timeout, "timeout", 5*time.Second, "give up on the backend after this long, connecting included")
	}
	return fs
}

// holderJSON is the JSON form of a leader.
type holderJSON struct {
	Time       string   `json:"time"`
	Election   string   `json:"election"`
	Leader     bool     `json:"leader"`
	Identity   string   `json:"identity,omitempty"`
	Token      uint64   `json:"token,omitempty"`
	TTLSeconds *float64 `json:"ttl_seconds,omitempty"`
	// Unknown is set, with Error, on a line of elect watch while the
	// backend cannot be read: Leader false then says nothing.
	Unknown bool   `json:"unknown,omitempty"`
	Error   string `json:"error,omitempty"`
	// Candidates are the live candidates with a priority (elect status
	// only, on a backend that keeps a registry).
	Candidates []candidateJSON `json:"candidates,omitempty"`
	// Yield is set on a line of elect watch when the previous leader
	// yielded to this one, of a higher priority.
	Yield *yieldJSON `json:"yield,omitempty"`
}

// yieldJSON says which leader yielded to the one on the line.
type yieldJSON struct {
	From         string `json:"from"`          // the leader that yielded
	FromPriority int    `json:"from_priority"` // its priority
	Priority     int    `json:"priority"`      // the new leader's
}

// candidateJSON is the JSON form of a candidate with a priority.
type candidateJSON struct {
	Identity string `json:"identity"`
	Priority int    `json:"priority"`
	Aside    bool   `json:"aside"`
}

// printJSON prints j on a line of its own.
func printJSON(w io.Writer, j any) {
	b, _ := json.Marshal(j)
	fmt.Fprintf(w, "%s\n", b)
}

// printStatus prints h (the zero Holder for none), the yield that made it
// leader if y is set, and the candidates with a priority, if any, as text
// or JSON.
func printStatus(w io.Writer, c *statusConfig, h backend.Holder, cands []backend.Entry, y *yieldJSON, withTime bool) {
	now := time.Now()
	slices.SortFunc(cands, func(a, b backend.Entry) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), strings.Compare(a.Identity, b.Identity), strings.Compare(a.ID, b.ID))
	})
	if !c.json {
		defer func() {
			for _, en := range cands {
				state := "campaigning"
				if en.Aside {
					state = "standing aside"
				}
				fmt.Fprintf(w, "candidate: %s (priority %d, %s)\n", en.Identity, en.Priority, state)
			}
		}()
	}
	if c.json {
		j := holderJSON{Time: now.UTC().Format(time.RFC3339Nano), Election: c.election, Leader: !h.IsZero(), Identity: h.Identity, Token: h.Token, Yield: y}
		for _, en := range cands {
			j.Candidates = append(j.Candidates, candidateJSON{Identity: en.Identity, Priority: en.Priority, Aside: en.Aside})
		}
		if h.TTL > 0 {
			s := h.TTL.Seconds()
			j.TTLSeconds = &s
		}
		printJSON(w, j)
		return
	}
	prefix, suffix := "", ""
	if withTime {
		prefix = now.Format(time.RFC3339) + " "
	}
	if y != nil {
		suffix = fmt.Sprintf(": %s (priority %d) yielded to priority %d", y.From, y.FromPriority, y.Priority)
	}
	switch {
	case h.IsZero():
		fmt.Fprintf(w, "%sno leader of %q\n", prefix, c.election)
	case h.TTL > 0:
		fmt.Fprintf(w, "%sleader of %q: %s (token %d, lease %v left)%s\n", prefix, c.election, h.Identity, h.Token, h.TTL.Round(time.Millisecond), suffix)
	default:
		fmt.Fprintf(w, "%sleader of %q: %s (token %d)%s\n", prefix, c.election, h.Identity, h.Token, suffix)
	}
}

func parseStatus(name, head string, args []string, stdout io.Writer) (*statusConfig, error) {
	c := new(statusConfig)
	fs := statusFlags(c, name)
	if err := parse(fs, args, stdout, head); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, exitf(exitUsage, "%s: unexpected argument %q", name, fs.Arg(0))
	}
	if err := c.check(); err != nil {
		return nil, exitf(exitUsage, "%s: %v", name, err)
	}
	if name == "status" {
		if err := checkTimeout(c.timeout); err != nil {
			return nil, exitf(exitUsage, "%s: %v", name, err)
		}
	}
	return c, nil
}

func statusMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseStatus("status", statusHead, args, stdout)
	if err != nil {
		return err
	}
	c.quiet(stderr)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	b, closer, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer closer.Close()
	if mb, ok := b.(*migrate.Backend); ok {
		return migrationStatus(ctx, stdout, c, mb)
	}
	h, err := b.Leader(ctx, c.election)
	var cands []backend.Entry
	if r, ok := b.(backend.Registry); ok && (err == nil || errors.Is(err, backend.ErrNoLeader)) {
		var cerr error
		if cands, cerr = r.Entries(ctx, c.election); cerr != nil {
			err = fmt.Errorf("candidates: %w", cerr)
		}
	}
	switch {
	case errors.Is(err, backend.ErrNoLeader):
		printStatus(stdout, c, backend.Holder{}, cands, nil, false)
		if f, ok := b.(backend.TTLFloor); ok && !c.json {
			printFloor(ctx, stdout, f)
		}
		return &exitError{code: exitNoLeader}
	case err != nil:
		return requestFailed(ctx, "status", err, c.timeout, c.backendURL)
	}
	printStatus(stdout, c, h, cands, nil, false)
	if f, ok := b.(backend.TTLFloor); ok && !c.json {
		printFloor(ctx, stdout, f)
	}
	return nil
}

// printFloor prints the shortest TTL the backend's store configuration
// allows, when the backend can tell (backend.TTLFloor).
func printFloor(ctx context.Context, w io.Writer, f backend.TTLFloor) {
	if floor, why, err := f.MinTTL(ctx); err == nil {
		fmt.Fprintf(w, "store: %s: leases need a TTL of at least %v\n", why, floor)
	}
}
