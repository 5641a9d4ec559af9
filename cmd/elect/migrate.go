//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/migrate"
)

const migrateHead = `Usage:
  elect migrate url --phase PHASE --old URL --new URL
  elect migrate cleanup --backend 'migrate+done://?old=..&new=..' --election NAME

Move an election from one backend to another during rolling deploys
(runbook: docs/migration.md). Each replica runs with a --backend URL of the
form

  migrate+PHASE://?old=<old URL, percent-encoded>&new=<new URL, percent-encoded>

where PHASE is old, both, new or done (runbook steps 1 to 4); 'elect migrate
url' prints it, after checking both URLs (their schemes and hosts, and that
they name two different stores; PHASE in any case). 'elect status' with such
a URL shows the phase, the marker, who holds each store and who leads, in
every phase. 'elect migrate cleanup' is step 4: once every replica runs in
phase done, it removes the "migrated" marker from the old store, and nothing
else (a fencing counter stays, so tokens keep rising); it refuses (exit 2)
when the old store's holder is a candidate, not the marker (runbook step 3
has not run), or when there is no marker to remove. Replicas may keep the
phase-done URL, old store included, after cleanup.
`

// migrateConfig holds the settings of elect migrate.
type migrateConfig struct {
	common
	phase, oldURL, newURL string
	timeout               time.Duration
}

func migrateMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "url" && args[0] != "cleanup") {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help") {
			fmt.Fprint(stdout, migrateHead)
			return nil
		}
		return exitf(exitUsage, "migrate: want 'url' or 'cleanup'\n\n%s", migrateHead)
	}
	sub, args := args[0], args[1:]
	c := new(migrateConfig)
	fs := newFlagSet("migrate " + sub)
	if sub == "url" {
		fs.StringVar(&c.phase, "phase", "", "runbook `phase`: old, both, new or done (required)")
		fs.StringVar(&c.oldURL, "old", "", "the old backend's `URL` (required but in phase done)")
		fs.StringVar(&c.newURL, "new", "", "the new backend's `URL` (required)")
	} else {
		c.register(fs)
		durationVar(fs, &c.timeout, "timeout", 10*time.Second, "give up on the backends after this long, connecting included")
	}
	if err := parse(fs, args, stdout, migrateHead); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitf(exitUsage, "migrate %s: unexpected argument %q", sub, fs.Arg(0))
	}
	if sub == "url" {
		return migrateURL(c, stdout)
	}
	if err := c.check(); err != nil {
		return exitf(exitUsage, "migrate cleanup: %v", err)
	}
	if err := checkTimeout(c.timeout); err != nil {
		return exitf(exitUsage, "migrate cleanup: %v", err)
	}
	c.quiet(stderr)
	return migrateCleanup(ctx, c, stdout)
}

// migrateURL prints the migrate+<phase>:// URL of c's flags.
func migrateURL(c *migrateConfig, stdout io.Writer) error {
	p, err := migrate.ParsePhase(c.phase)
	switch {
	case err != nil:
		return exitf(exitUsage, "migrate url: --phase: %v", err)
	case c.newURL == "":
		return exitf(exitUsage, "migrate url: --new: want the new backend's URL")
	case c.oldURL == "" && p != migrate.PhaseDone:
		return exitf(exitUsage, "migrate url: --old: want the old backend's URL in phase %v", p)
	}
	// old before new, as the runbook reads (url.Values.Encode would sort
	// them the other way).
	query := "new=" + url.QueryEscape(c.newURL)
	if c.oldURL != "" {
		query = "old=" + url.QueryEscape(c.oldURL) + "&" + query
	}
	u := fmt.Sprintf("%s%v://?%s", migrate.SchemePrefix, p, query)
	if err := migrate.CheckURL(u); err != nil {
		return exitf(exitUsage, "migrate url: %v", err)
	}
	fmt.Fprintln(stdout, u)
	return nil
}

// migrateCleanup runs migrate.Cleanup through the backend of c.
func migrateCleanup(ctx context.Context, c *migrateConfig, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	b, closer, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer closer.Close()
	mb, ok := b.(*migrate.Backend)
	if !ok {
		return exitf(exitUsage, "migrate cleanup: --backend: want a migrate+done://?old=..&new=.. URL")
	}
	cl, err := mb.Cleanup(ctx, c.election)
	switch {
	case errors.Is(err, migrate.ErrNotMarked):
		return exitf(exitUsage, "migrate cleanup: %v; nothing was changed", err)
	case usageError(err):
		return requestFailed(ctx, "migrate cleanup", err, 0, "")
	case errors.Is(err, context.DeadlineExceeded):
		return exitf(exitBackend, "migrate cleanup: no answer from the backends within --timeout %v: %v%s", c.timeout, err, partly(cl))
	case err != nil:
		return exitf(exitBackend, "migrate cleanup: %v%s", err, partly(cl))
	}
	if cl.Marker.IsZero() {
		fmt.Fprintf(stdout, "removed what an interrupted cleanup left of the migrated marker of %q on the old store (no quorum of it remained); nothing else was changed\n", c.election)
		return nil
	}
	fmt.Fprintf(stdout, "removed the migrated marker %q (token %d) of %q from the old store; nothing else was changed (a fencing counter the store keeps stays, so tokens keep rising)\n",
		cl.Marker.Identity, cl.Marker.Token, c.election)
	return nil
}

// partly says what a failed cleanup removed before it failed.
func partly(cl migrate.Cleaned) string {
	if cl.Removed {
		return " (the marker was removed from part of the old store; run cleanup again to finish)"
	}
	return ""
}

// sideJSON is the JSON form of one store's holder in elect status.
type sideJSON struct {
	Identity string `json:"identity,omitempty"`
	Token    uint64 `json:"token,omitempty"`
	Error    string `json:"error,omitempty"`
}

// migrationJSON is the JSON form of elect status for a migrate URL.
type migrationJSON struct {
	holderJSON
	Phase        string    `json:"phase"`
	Step         int       `json:"step"`
	Marked       bool      `json:"marked"`
	OldCandidate bool      `json:"old_candidate,omitempty"`
	Old          *sideJSON `json:"old,omitempty"`
	New          sideJSON  `json:"new"`
}

func side(h backend.Holder, err error) sideJSON {
	if err != nil {
		return sideJSON{Error: err.Error()}
	}
	return sideJSON{Identity: h.Identity, Token: h.Token}
}

func (s sideJSON) String() string {
	switch {
	case s.Error != "":
		return "error: " + s.Error
	case s.Identity == "":
		return "no holder"
	}
	return fmt.Sprintf("%s (token %d)", s.Identity, s.Token)
}

// markerState says in words what the old store's marker means in s's
// phase; hasOld tells whether the URL names the old store.
func markerState(s migrate.Status, hasOld bool) string {
	switch {
	case !hasOld:
		return "not read (this URL names no old store)"
	case s.OldErr != nil:
		return "unknown (the old store could not be read)"
	case s.Marked:
		return "written (step 3 done: old-only replicas cannot lead)"
	case s.OldCandidate:
		return "absent, and a candidate holds the old store: a replica runs on the old store alone beside the new one; stop it"
	case s.Phase == migrate.PhaseDone:
		return "absent (removed by cleanup; the new store alone orders terms)"
	}
	return "absent (steps 1-2, or step 3 before a phase-new replica led)"
}

// migrationStatus prints the status of a migrating election: its phase,
// the marker, each store's holder and the leader as a fence sees it. It
// exits 3 when a store the leader depends on could not be read.
func migrationStatus(ctx context.Context, w io.Writer, c *statusConfig, b *migrate.Backend) error {
	s, err := b.Status(ctx, c.election)
	switch {
	case usageError(err):
		return requestFailed(ctx, "status", err, 0, "")
	case errors.Is(err, context.DeadlineExceeded):
		return exitf(exitBackend, "status: no answer from the backends within --timeout %v: %v", c.timeout, err)
	case err != nil:
		return exitf(exitBackend, "status: %v", err)
	}
	hasOld := s.HasOld
	j := migrationJSON{
		holderJSON: holderJSON{Time: time.Now().UTC().Format(time.RFC3339Nano), Election: c.election,
			Leader: !s.Leader.IsZero(), Identity: s.Leader.Identity, Token: s.Leader.Token},
		Phase: s.Phase.String(), Step: s.Phase.Step(), Marked: s.Marked, OldCandidate: s.OldCandidate,
		New: side(s.New, s.NewErr),
	}
	if hasOld {
		o := side(s.Old, s.OldErr)
		j.Old = &o
	}
	if c.json {
		out, _ := json.Marshal(j)
		fmt.Fprintf(w, "%s\n", out)
	} else {
		fmt.Fprintf(w, "migration of %q: this URL's phase %v (runbook step %d); marker %s\n", c.election, s.Phase, s.Phase.Step(), markerState(s, hasOld))
		if j.Old != nil {
			fmt.Fprintf(w, "  old store: %v\n", j.Old)
		}
		fmt.Fprintf(w, "  new store: %v\n", j.New)
		switch {
		case s.Err() != nil:
			fmt.Fprintf(w, "leader of %q unknown: the %v\n", c.election, s.Err())
		case s.Leader.IsZero():
			fmt.Fprintf(w, "no leader of %q\n", c.election)
		default:
			fmt.Fprintf(w, "leader of %q: %s (token %d)\n", c.election, s.Leader.Identity, s.Leader.Token)
		}
		printFloor(ctx, w, b)
	}
	switch {
	case s.Err() != nil:
		return &exitError{code: exitBackend}
	case s.Leader.IsZero():
		return &exitError{code: exitNoLeader}
	}
	return nil
}
