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
url' prints it. 'elect status' with such a URL shows the phase, the marker,
and who leads on each store. 'elect migrate cleanup' is step 4: it removes
the "migrated" marker and the old store's keys; run it once every replica
runs in phase done.
`

// migrateConfig holds the settings of elect migrate.
type migrateConfig struct {
	common
	phase, oldURL, newURL string
	timeout               time.Duration
}

func migrateMain(ctx context.Context, args []string, stdout, _ io.Writer) error {
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
	q := url.Values{}
	if c.oldURL != "" {
		q.Set("old", c.oldURL)
	}
	q.Set("new", c.newURL)
	fmt.Fprintf(stdout, "%s%v://?%s\n", migrate.SchemePrefix, p, q.Encode())
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
	switch err := mb.Cleanup(ctx, c.election); {
	case errors.Is(err, backend.ErrInvalid):
		return exitf(exitUsage, "migrate cleanup: %v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return exitf(exitBackend, "migrate cleanup: no answer from the backends within --timeout %v: %v", c.timeout, err)
	case err != nil:
		return exitf(exitBackend, "migrate cleanup: %v", err)
	}
	fmt.Fprintf(stdout, "removed the migrated marker of %q and its keys from the old store\n", c.election)
	return nil
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
	Phase  string    `json:"phase"`
	Step   int       `json:"step"`
	Marked bool      `json:"marked"`
	Old    *sideJSON `json:"old,omitempty"`
	New    sideJSON  `json:"new"`
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

// migrationStatus prints the status of a migrating election: its phase,
// the marker, each store's holder and the leader as a fence sees it.
func migrationStatus(ctx context.Context, w io.Writer, c *statusConfig, b *migrate.Backend) error {
	s, err := b.Status(ctx, c.election)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return exitf(exitBackend, "status: no answer from the backends within --timeout %v: %v", c.timeout, err)
	case err != nil:
		return exitf(exitBackend, "status: %v", err)
	}
	j := migrationJSON{
		holderJSON: holderJSON{Time: time.Now().UTC().Format(time.RFC3339Nano), Election: c.election,
			Leader: !s.Leader.IsZero(), Identity: s.Leader.Identity, Token: s.Leader.Token},
		Phase: s.Phase.String(), Step: s.Phase.Step(), Marked: s.Marked, New: side(s.New, s.NewErr),
	}
	if s.Phase != migrate.PhaseDone {
		o := side(s.Old, s.OldErr)
		j.Old = &o
	}
	if c.json {
		out, _ := json.Marshal(j)
		fmt.Fprintf(w, "%s\n", out)
	} else {
		marker := "absent (steps 1-2, or step 3 before a phase-new replica led)"
		if s.Marked {
			marker = "written (step 3 done: old-only replicas cannot lead)"
		}
		fmt.Fprintf(w, "migration of %q: this URL's phase %v (runbook step %d); marker %s\n", c.election, s.Phase, s.Phase.Step(), marker)
		if j.Old != nil {
			fmt.Fprintf(w, "  old store: %v\n", j.Old)
		}
		fmt.Fprintf(w, "  new store: %v\n", j.New)
		if s.Leader.IsZero() {
			fmt.Fprintf(w, "no leader of %q in phase %v\n", c.election, s.Phase)
		} else {
			fmt.Fprintf(w, "leader of %q: %s (token %d)\n", c.election, s.Leader.Identity, s.Leader.Token)
		}
	}
	if s.Leader.IsZero() {
		return &exitError{code: exitNoLeader}
	}
	return nil
}
