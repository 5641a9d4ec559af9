//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
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
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.backendURL, "backend", "", "backend `URL`: redis://h1,h2,h3 | etcd://h1,h2 | zk://h1,h2/root (required)")
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
	// go-redis logs dial failures on its own; keep them for --log-level=debug.
	redis.SetLogger(redisLogger{log})
	return log
}

// redisLogger sends go-redis's log lines to elect's logger at level Debug.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, args ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, args...), "component", "go-redis")
}

// open opens the backend, mapping a bad URL to the usage exit code.
func (c *common) open(ctx context.Context) (backend.Backend, io.Closer, error) {
	b, closer, err := backendurl.Open(ctx, c.backendURL)
	if err != nil {
		return nil, nil, exitf(exitUsage, "--backend: %v", err)
	}
	return b, closer, nil
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
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" {
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

// configEnv lists the environment variables that configure elect; they
// are removed from the command's environment (they may hold credentials).
func configEnv() []string {
	var names []string
	for _, fs := range []*flag.FlagSet{runFlags(new(runConfig)), statusFlags(new(statusConfig), "status")} {
		fs.VisitAll(func(f *flag.Flag) { names = append(names, envName(f.Name)) })
	}
	return names
}

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
