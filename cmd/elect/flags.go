//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/klog/v2"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/internal/wait"
)

// envName is the environment variable that sets a flag: --metrics-addr is
// ELECT_METRICS_ADDR.
func envName(flagName string) string {
	return "ELECT_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// common holds the settings every subcommand has.
type common struct {
	backendURL string
	election   string
	logLevel   string
	logFormat  string

	log *slog.Logger // set by logger; open warns on it
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.backendURL, "backend", "", "backend `URL`: redis://h1,h2,h3 | etcd://h1,h2 | zk://h1,h2 | kube://?namespace=NS (required)")
	fs.StringVar(&c.election, "election", "", "`name` of the election (required)")
	fs.StringVar(&c.logLevel, "log-level", "info", "elect's log `level` on stderr: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log `format`: text or json")
}

func (c *common) check() error {
	switch {
	case c.backendURL == "":
		return errors.New("no backend: set --backend or ELECT_BACKEND to a URL such as redis://127.0.0.1:6379 (see 'elect help')")
	case c.election == "":
		return errors.New("no election: set --election or ELECT_ELECTION to the name the replicas share")
	case !slices.Contains([]string{"debug", "info", "warn", "error"}, strings.ToLower(c.logLevel)):
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", c.logLevel)
	case c.logFormat != "text" && c.logFormat != "json":
		return fmt.Errorf("--log-format %q: want text or json", c.logFormat)
	}
	if err := backend.ValidateElection(c.election); err != nil {
		return fmt.Errorf("--election: %w", err)
	}
	return nil
}

func (c *common) logger(stderr io.Writer) *slog.Logger {
	log := newLogger(stderr, c.logLevel, c.logFormat)
	// go-redis and client-go log dial and request failures on their own;
	// keep them for --log-level=debug.
	quietLibraries(log)
	c.log = log
	return log
}

// quiet sends the client libraries' log lines to a logger of c's level
// and format at level Debug (see quietLibraries), for the subcommands that
// log nothing of their own: their output is their answer, not a log.
func (c *common) quiet(stderr io.Writer) {
	level, format := c.logLevel, c.logFormat
	if level == "" {
		level, format = "info", "text"
	}
	quietLibraries(newLogger(stderr, level, format))
}

// quietLibraries sends the log lines of the client libraries (go-redis,
// and client-go through klog) to log at level Debug: elect reports what
// fails itself. The libraries' loggers are process globals, set once to
// loggers that read libraryLog: an elect run in the same process (the
// tests run many) changes where the lines go without writing a global
// that another run's clients read.
func quietLibraries(log *slog.Logger) {
	libraryLog.Store(log)
	setLibraryLoggers()
}

var (
	libraryLog        atomic.Pointer[slog.Logger]
	setLibraryLoggers = sync.OnceFunc(func() {
		redis.SetLogger(redisLogger{})
		klog.SetSlogLogger(slog.New(debugHandler{}).With("component", "client-go"))
	})
)

// debugHandler passes every record to the Handler of libraryLog at the
// time, at level Debug, with the attributes and groups added to it.
type debugHandler struct {
	with func(slog.Handler) slog.Handler // WithAttrs and WithGroup, in order; nil for none
}

func (d debugHandler) handler() slog.Handler {
	log := libraryLog.Load()
	if log == nil {
		return slog.DiscardHandler
	}
	if d.with == nil {
		return log.Handler()
	}
	return d.with(log.Handler())
}

// Enabled passes client-go's errors, warnings and unleveled lines (klog
// V(0)), never its verbose ones: V(1) feature-gate states, V(6) request
// URLs, V(8) request and response bodies (hex dumps of protobuf), which
// go-logr hands to slog at level -V.
func (d debugHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo && d.handler().Enabled(ctx, slog.LevelDebug)
}

func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	h := d.handler()
	if !d.Enabled(ctx, r.Level) {
		return nil // klog does not ask Enabled first
	}
	r.Level = slog.LevelDebug
	return h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return d.then(func(h slog.Handler) slog.Handler { return h.WithAttrs(as) })
}

func (d debugHandler) WithGroup(g string) slog.Handler {
	return d.then(func(h slog.Handler) slog.Handler { return h.WithGroup(g) })
}

func (d debugHandler) then(f func(slog.Handler) slog.Handler) debugHandler {
	prev := d.with
	if prev == nil {
		return debugHandler{f}
	}
	return debugHandler{func(h slog.Handler) slog.Handler { return f(prev(h)) }}
}

// redisLogger sends go-redis's log lines to libraryLog at level Debug.
type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, args ...any) {
	if log := libraryLog.Load(); log != nil {
		log.DebugContext(ctx, fmt.Sprintf(format, args...), "component", "go-redis")
	}
}

// warnWeak logs the advice of a backend whose configuration is valid but
// weak (redlock: a single master, an even number of masters).
func warnWeak(ctx context.Context, log *slog.Logger, b backend.Backend) {
	if w, ok := b.(backend.Warner); ok {
		for _, msg := range w.Warnings() {
			log.WarnContext(ctx, msg)
		}
	}
}

// open opens the backend. A URL that can never work (malformed, an unknown
// scheme or parameter, refused options or credentials) is a usage error,
// exit 2, even when ctx ended while it was opened. A backend that cannot be reached yet (a refused connection, a
// name that does not resolve, no answer) is not: it is retried, with a
// warning naming the cause at the first failure and then every
// openWarnEvery, until ctx ends (exit 3, with the last error and what a
// connection to each server says) or SIGINT or SIGTERM stops elect (exit 0).
func (c *common) open(parent context.Context) (backend.Backend, io.Closer, error) {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := c.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		last   error
		warned time.Time
	)
	for attempt := 0; ; attempt++ {
		b, closer, err := backendurl.Open(ctx, c.backendURL)
		switch {
		case err == nil:
			warnWeak(ctx, log, b)
			return b, closer, nil
		case !unreachable(err) && !errors.Is(err, context.Canceled):
			// Malformed, refused options or credentials: however little
			// time was left, the URL is what must change.
			return nil, nil, exitf(exitUsage, "--backend: %v", err)
		case ctx.Err() == nil:
			last = err
			delay := min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)
			level := slog.LevelDebug
			if time.Since(warned) >= openWarnEvery {
				level, warned = slog.LevelWarn, time.Now()
			}
			log.Log(ctx, level, "cannot reach the backend; retrying", "error", err, "retry_in", delay)
			if wait.Sleep(ctx, delay) {
				continue
			}
		case last == nil || !errors.Is(err, ctx.Err()):
			last = err
		}
		if parent.Err() == nil {
			return nil, nil, &exitError{code: exitOK} // stopped by SIGINT or SIGTERM
		}
		if why := diagnose(context.WithoutCancel(ctx), c.backendURL); why != "" {
			return nil, nil, exitf(exitBackend, "--backend: cannot reach the backend: %v; a connection to each server says: %s", last, why)
		}
		return nil, nil, exitf(exitBackend, "--backend: cannot reach the backend: %v", last)
	}
}

// openWarnEvery is the time between two warnings while the backend cannot
// be reached at start.
const openWarnEvery = 10 * time.Second

// unreachable reports whether err, from opening a backend URL, says that
// the backend could not be reached rather than that the URL is wrong: a
// network error, a refused connection, or no answer in time.
func unreachable(err error) bool {
	var (
		opErr  *net.OpError
		dnsErr *net.DNSError
	)
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.As(err, &opErr) || errors.As(err, &dnsErr)
}

// newFlagSet returns a silent flag set: parse prints the usage.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// printUsage writes head, then each flag with its environment variable.
func printUsage(w io.Writer, fs *flag.FlagSet, head string) {
	fmt.Fprint(w, head)
	fmt.Fprintln(w, "\nFlags (each also set by the environment variable shown):")
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		fmt.Fprintf(w, "%s\n      %s\n      [%s", line, usage, envName(f.Name))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" && f.DefValue != "0" {
			fmt.Fprintf(w, ", default %s", f.DefValue)
		}
		fmt.Fprintln(w, "]")
	})
}

// parse parses args, then applies the environment variables of the flags
// not given. --help prints the usage to stdout and exits 0; errors exit 2.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer, head string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout, fs, head)
		return &exitError{code: exitOK}
	}
	if err != nil {
		return exitf(exitUsage, "%s: %v\nRun 'elect help %s' for usage.", fs.Name(), err, fs.Name())
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok && v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = exitf(exitUsage, "environment variable %s=%q: %v", env, v, e)
			}
		}
	})
	return err
}

// isElectEnv reports whether kv, an environment entry, is an ELECT_*
// variable. None of them reaches the command: any subcommand's flag may be
// set by one (ELECT_BACKEND, ELECT_OLD and ELECT_NEW hold URLs with
// credentials), and an inherited ELECT_TERM_* would describe another term.
func isElectEnv(kv string) bool { return strings.HasPrefix(kv, "ELECT_") }

// durationValue is a time.Duration flag whose parse error names the format,
// for the command line and the environment alike.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 10s, 1m30s or 500ms")
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }

// durationVar defines a duration flag like flag.DurationVar, with
// durationValue's error.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

// boolValue is a bool flag whose parse error names the values it takes.
type boolValue bool

func (b *boolValue) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*b = boolValue(v)
	return nil
}

func (b *boolValue) String() string { return strconv.FormatBool(bool(*b)) }

// IsBoolFlag lets --flag alone mean --flag=true.
func (b *boolValue) IsBoolFlag() bool { return true }

// boolVar defines a bool flag like flag.BoolVar, with boolValue's error.
func boolVar(fs *flag.FlagSet, p *bool, name string, value bool, usage string) {
	*p = value
	fs.Var((*boolValue)(p), name, usage)
}

// intValue is an int flag whose parse error says what it wants.
type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want a whole number")
	}
	*v = intValue(n)
	return nil
}

func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

// intVar defines an int flag like flag.IntVar, with intValue's error.
func intVar(fs *flag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var((*intValue)(p), name, usage)
}
