//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/cmd/elect/internal/compare"
)

// exitInterrupted is the exit code of a compare stopped by SIGINT or
// SIGTERM, after its cleanup.
const exitInterrupted = 130

const compareHead = `Usage: elect compare --backend URL [--backend URL ...] [flags]

Measure the backends side by side under the same workloads, through the
same API: uncontended acquire+release, throughput (--concurrency goroutines
on as many elections), graceful hand-over, renewal of --held elections,
crash failover (the holder's connections cut without a release),
rebalance of a partition group (--partitions over --members) as a member
joins and leaves, and the shortest TTL each backend grants. Renewal also
counts the requests the client sends per held election (read on the wire
by local proxies: redis, etcd and zk URLs; a kube:// client counts its
own). A kube:// client limits its request rate (the URL's qps): renewal
holds only as many elections as half that rate renews every TTL/3, and
the table says how many.
Trials are interleaved across backends.

Prints a table (or --json, or --markdown) on stdout, progress on stderr;
--html writes a self-contained page with a latency CDF per workload.

Works only in elections named elect-compare/<random>/... (inside the URL's
prefix or root), and removes everything it created before it exits, also
when interrupted, or names what it left. A backend that does not answer a
first campaign within 10s is reported before any workload runs. Ctrl-C
stops the trial under way, then cleans up (at most 40s whatever --ttl); a
second Ctrl-C stops the cleanup at once. Exit 0 when every workload ran
without error, 2 for bad flags (an --html path that cannot be written
included), 3 when some workload failed, a backend did not answer or
something was left behind, 130 when interrupted.

The default run takes minutes; --short takes seconds per backend.
`

// urlList is a repeatable string flag.
type urlList []string

func (l *urlList) String() string { return strings.Join(*l, " ") }

func (l *urlList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// compareConfig holds the settings of elect compare.
type compareConfig struct {
	backends                                  urlList
	ttl, duration                             time.Duration
	ttlSet                                    bool // --ttl was given
	short, json, markdown                     bool
	html                                      string
	trials, failoverTrials, concurrency, held int
	renewRounds, throughputTrials             int
	partitions, members, rebalanceTrials      int
}

func compareFlags(c *compareConfig) *flag.FlagSet {
	fs := newFlagSet("compare")
	fs.Var(&c.backends, "backend", "backend `URL` to compare; repeat for each backend (required)")
	fs.DurationVar(&c.ttl, "ttl", 2*time.Second, "lease TTL of every workload (raised, unless given, to the shortest every backend accepts)")
	fs.BoolVar(&c.short, "short", false, "a quick run with few samples (seconds per backend)")
	fs.DurationVar(&c.duration, "duration", 0, "length of each throughput trial (default 1s; --short 300ms)")
	fs.IntVar(&c.trials, "trials", 0, "acquire+release and hand-over trials per backend (default 200; --short 10)")
	fs.IntVar(&c.failoverTrials, "failover-trials", 0, "crash failover trials per backend, about one TTL each (default 10; --short 2)")
	fs.IntVar(&c.throughputTrials, "throughput-trials", 0, "throughput trials per backend (default 10; --short 3)")
	fs.IntVar(&c.concurrency, "concurrency", 0, "goroutines and elections of the throughput workload (default 16; --short 4)")
	fs.IntVar(&c.held, "held", 0, "elections held while renewal is measured (default 1000; --short 20; fewer on a rate-limited kube:// client)")
	fs.IntVar(&c.renewRounds, "renew-rounds", 0, "rounds of renewals, one every TTL/3 (default 10; --short 3)")
	fs.IntVar(&c.partitions, "partitions", 0, "partitions of the rebalance workloads' group (default 64; --short 16)")
	fs.IntVar(&c.members, "members", 0, "members of that group before one joins (default 3; --short 2)")
	fs.IntVar(&c.rebalanceTrials, "rebalance-trials", 0, "join-and-leave trials per backend (default 5; --short 2)")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON (with every sample)")
	fs.BoolVar(&c.markdown, "markdown", false, "print the comparison as a Markdown table")
	fs.StringVar(&c.html, "html", "", "also write a self-contained HTML report with latency plots to `FILE`")
	return fs
}

// options maps the flags to compare.Options.
func (c *compareConfig) options() *compare.Options {
	o := &compare.Options{}
	if c.short {
		o = compare.Short()
	}
	o.TTL = c.ttl
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	set(&o.Trials, c.trials)
	set(&o.FailoverTrials, c.failoverTrials)
	set(&o.ThroughputTrials, c.throughputTrials)
	set(&o.Concurrency, c.concurrency)
	set(&o.Held, c.held)
	set(&o.RenewRounds, c.renewRounds)
	set(&o.Partitions, c.partitions)
	set(&o.Members, c.members)
	set(&o.RebalanceTrials, c.rebalanceTrials)
	if c.duration != 0 {
		o.Duration = c.duration
	}
	return o
}

// targets makes a target of each --backend, named after its scheme
// ("etcd", "etcd-2" for a second etcd).
func (c *compareConfig) targets() ([]compare.Target, error) {
	var out []compare.Target
	seen := map[string]int{}
	for _, raw := range c.backends {
		t, err := compare.URLTarget(raw, nil)
		if err != nil {
			return nil, exitf(exitUsage, "compare: --backend: %v", err)
		}
		if !backendurl.DefaultMux().ValidScheme(t.Name) {
			_, _, err := backendurl.Open(context.Background(), raw) // names the known schemes
			return nil, exitf(exitUsage, "compare: --backend: %v", err)
		}
		if seen[t.Name]++; seen[t.Name] > 1 {
			t.Name = fmt.Sprintf("%s-%d", t.Name, seen[t.Name])
		}
		out = append(out, t)
	}
	return out, nil
}

func parseCompare(args []string, stdout io.Writer) (*compareConfig, error) {
	c := new(compareConfig)
	fs := compareFlags(c)
	if err := parse(fs, args, stdout, compareHead); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { c.ttlSet = c.ttlSet || f.Name == "ttl" })
	switch {
	case fs.NArg() > 0:
		return nil, exitf(exitUsage, "compare: unexpected argument %q", fs.Arg(0))
	case len(c.backends) == 0:
		return nil, exitf(exitUsage, "compare: no backend: give --backend URL once per backend (see 'elect help compare')")
	case c.json && c.markdown:
		return nil, exitf(exitUsage, "compare: --json and --markdown: want at most one")
	}
	for _, raw := range c.backends {
		if u, err := url.Parse(raw); err != nil || u.Scheme == "" {
			return nil, exitf(exitUsage, "compare: --backend: malformed URL (want scheme://host:port,...)")
		}
	}
	return c, nil
}

func compareMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseCompare(args, stdout)
	if err != nil {
		return err
	}
	targets, err := c.targets()
	if err != nil {
		return err
	}
	html, err := openHTML(c.html)
	if err != nil {
		return err
	}
	defer html.discard()
	o := c.options()
	// Refuse bad flags before any output or connection: Run checks its
	// options before its targets, so with none it refuses only bad options.
	if _, err := compare.Run(ctx, nil, o); err != nil && !strings.Contains(err.Error(), "no targets") {
		return exitf(exitUsage, "%v", err)
	}
	o.TTL = ttlFloors(ctx, stderr, targets, o.TTL, c.ttlSet)
	o.Prefix = compare.NewPrefix()
	fmt.Fprintf(stderr, "elect compare: elections under %s\n", o.Prefix)
	pp := &progressPrinter{w: stderr}
	o.Progress = pp.print
	// A crashed holder's clients would log their failed dials and requests.
	quietLibraries(newLogger(stderr, "info", "text"))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	abort := make(chan struct{})
	o.Abort = abort
	stopSignals := onStopSignals(func(n int, s os.Signal) {
		switch n {
		case 1:
			pp.stop(func() {
				fmt.Fprintf(stderr, "elect compare: %v: stopping the trial under way, then removing what the run created under %s "+
					"(at most %v once the trial stopped); %v again to stop at once and leave it\n", s, o.Prefix, compare.CleanupBound, s)
				cancel()
			})
		case 2:
			fmt.Fprintf(stderr, "elect compare: %v again: stopping the cleanup now\n", s)
			close(abort)
		}
	})
	rep, err := compare.Run(ctx, targets, o)
	stopSignals()
	switch {
	case rep == nil && usageError(err):
		return exitf(exitUsage, "%v", err)
	case rep == nil && ctx.Err() != nil:
		return exitf(exitInterrupted, "compare: interrupted while opening the backends")
	case rep == nil:
		return exitf(exitBackend, "%v", err)
	}
	if err := c.write(rep, stdout, html); err != nil {
		return err
	}
	if rep.Interrupted {
		if left := rep.Left(); left != nil {
			return exitf(exitInterrupted, "compare: interrupted; left behind under %s:\n%v", rep.Prefix, left)
		}
		return exitf(exitInterrupted, "compare: interrupted; removed what the run created under %s", rep.Prefix)
	}
	if err := rep.Failed(); err != nil {
		return exitf(exitBackend, "compare: %v", err)
	}
	return nil
}

// ttlFloors prints, for each target whose backend reports the shortest
// TTL it accepts (backend.TTLFloor), that TTL and why, and returns the TTL
// to run with: ttl, raised to the longest of those floors unless ttlSet
// (--ttl given), so that the default runs on every backend; with --ttl
// below a floor, a warning that the backend refuses every Campaign.
func ttlFloors(ctx context.Context, w io.Writer, targets []compare.Target, ttl time.Duration, ttlSet bool) time.Duration {
	type floor struct {
		name string
		d    time.Duration
	}
	var floors []floor
	for _, t := range targets {
		cl, err := t.Open(ctx)
		if err != nil {
			continue // Run reports it
		}
		if f, ok := cl.Backend.(backend.TTLFloor); ok {
			if d, why, err := f.MinTTL(ctx); err == nil {
				fmt.Fprintf(w, "elect compare: %s: %s: leases need a TTL of at least %v\n", t.Name, why, d)
				floors = append(floors, floor{t.Name, d})
			}
		}
		cl.Closer.Close()
	}
	run := ttl
	for _, f := range floors {
		if !ttlSet && f.d > run {
			run = f.d
		}
	}
	if run != ttl {
		fmt.Fprintf(w, "elect compare: TTL %v (not the default %v): the shortest every backend accepts; --ttl sets another\n", run, ttl)
	}
	for _, f := range floors {
		if run < f.d {
			fmt.Fprintf(w, "elect compare: warning: --ttl %v is below it; %s refuses every Campaign\n", run, f.name)
		}
	}
	return run
}

// onStopSignals calls f with the count and the signal at each SIGINT or
// SIGTERM, from a goroutine of its own, until the function it returns is
// called; that function waits for f's last call.
func onStopSignals(f func(n int, s os.Signal)) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 1; ; n++ {
			select {
			case s := <-sigs:
				f(n, s)
			case <-done:
				return
			}
		}
	})
	return func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
	}
}

// htmlFile is the --html file, opened before the run so that a path that
// cannot be written is refused before anything runs.
type htmlFile struct {
	f       *os.File
	created bool // by this run: removed unless written
	written bool
}

// openHTML opens path for writing without truncating it (nil for no path).
func openHTML(path string) (*htmlFile, error) {
	if path == "" {
		return nil, nil
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, exitf(exitUsage, "compare: --html: cannot write the report there: %v", err)
	}
	return &htmlFile{f: f, created: errors.Is(statErr, fs.ErrNotExist)}, nil
}

// write replaces the file's content with rep's HTML page.
func (h *htmlFile) write(rep *compare.Report) error {
	if err := h.f.Truncate(0); err != nil {
		return err
	}
	if err := rep.WriteHTML(h.f); err != nil {
		return err
	}
	h.written = true
	return nil
}

// discard closes the file, and removes it if this run created it and wrote
// nothing.
func (h *htmlFile) discard() {
	if h == nil {
		return
	}
	_ = h.f.Close()
	if h.created && !h.written {
		_ = os.Remove(h.f.Name())
	}
}

// write prints the report in the chosen format, and the HTML file.
func (c *compareConfig) write(rep *compare.Report, stdout io.Writer, html *htmlFile) error {
	var err error
	switch {
	case c.json:
		err = rep.WriteJSON(stdout)
	case c.markdown:
		err = rep.WriteMarkdown(stdout)
	default:
		err = rep.WriteTable(stdout)
	}
	if err != nil {
		return err
	}
	if html == nil {
		return nil
	}
	if err := html.write(rep); err != nil {
		return exitf(exitInternal, "compare: --html: %v", err)
	}
	if err := html.f.Close(); err != nil {
		return exitf(exitInternal, "compare: --html: %v", err)
	}
	return nil
}

// progressPrinter prints a progress line at each new phase and at most
// once a second within one. Once stopped, it prints the cleanup's lines
// only: the trial that was under way ends, and no other starts.
type progressPrinter struct {
	w       io.Writer
	mu      sync.Mutex
	phase   string
	last    time.Time
	stopped bool
}

func (pp *progressPrinter) print(p compare.Progress) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.stopped && p.Phase != compare.PhaseCleanup {
		return
	}
	if p.Phase == pp.phase && time.Since(pp.last) < time.Second && p.Done != p.Total {
		return
	}
	pp.phase, pp.last = p.Phase, time.Now()
	fmt.Fprintf(pp.w, "elect compare: %s\n", p)
}

// stop stops the printing of trials, and runs announce (which says so)
// before any later line.
func (pp *progressPrinter) stop(announce func()) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.stopped = true
	announce()
}
