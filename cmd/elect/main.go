//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
)

// Exit codes of elect. A command's own status passes through unchanged
// (128+N when it was killed by signal N).
const (
	exitOK        = 0   // success; or --once and another replica ran the command
	exitNoLeader  = 1   // no leader, or --once not elected while no replica leads
	exitUsage     = 2   // what the user must change: flags, URL, a refused TTL or credentials
	exitBackend   = 3   // the backend cannot be reached or did not answer in time
	exitLost      = 4   // --once: the term ended while the command ran; it was stopped
	exitInternal  = 125 // elect itself failed
	exitCannotRun = 126 // the command was found but could not be started
	exitNotFound  = 127 // the command was not found
)

// exitError carries an exit code out of a subcommand, with the message to
// print (none when msg is empty).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

func main() {
	os.Exit(elect(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const topUsage = `elect runs a command on one replica at a time, elected through Redis
(Redlock), etcd, ZooKeeper or Kubernetes Leases.

Usage:
  elect run    [flags] -- COMMAND [ARGS...]   run COMMAND while leading
  elect status [flags]                        print the current leader
  elect watch  [flags]                        print each change of leader
  elect partitions [flags]                    print who owns each partition of a group
  elect compare --backend URL --backend URL…  measure backends side by side
  elect migrate url|cleanup [flags]           move an election between backends
  elect help   [run|status|watch|partitions|compare|migrate]  show help
  elect version                               print the version and build information

Every flag can also be set by an environment variable: --backend by
ELECT_BACKEND, --metrics-addr by ELECT_METRICS_ADDR, and so on. Flags win.

Backend URLs (rediss, etcds and zks are the same over TLS):
  redis://[user:pass@]h1:6379,h2:6379,h3:6379[/db][?prefix=..&request_timeout=50ms]
  etcd://[user:pass@]h1:2379,h2:2379[?prefix=..&request_timeout=3s]
  zk://[user:pass@]h1:2181,h2:2181[?prefix=/elector&tick_time=2s&sync_limit=5]
  kube://[?kubeconfig=PATH&context=NAME&namespace=NS]  (or kube://host:6443?token_file=..&ca=..)
  migrate+PHASE://?old=URL&new=URL  (each URL percent-encoded; PHASE old,
      both, new or done: 'elect migrate url' prints it; see 'elect help migrate')
  Every parameter: section URLs of 'go doc github.com/leaderkit/elector/redlock'
  (and of .../etcd, .../zookeeper, .../kube).

Exit codes:
  0    success; with --once, also when another replica ran the command;
       stopped by SIGINT or SIGTERM (with --once, once COMMAND ran: its status)
  1    no leader (status, partitions), or --once not elected while none leads
  2    what you must change: flags, environment variables, the backend URL,
       a TTL the backend refuses, credentials or permissions it refuses
  3    the backend cannot be reached, or did not answer in time
  4    --once: leadership was lost while the command ran; it was stopped
  125  elect failed
  126  the command could not be started; 127 the command was not found
  other  the command's own exit status (128+N when killed by signal N)

Run 'elect help run' for the flags of run.
`

// elect runs the command line args and returns the exit code.
func elect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return exitUsage
	}
	var err error
	switch sub, rest := args[0], args[1:]; sub {
	case "run":
		err = runMain(ctx, rest, stdout, stderr)
	case "status":
		err = statusMain(ctx, rest, stdout, stderr)
	case "watch":
		err = watchMain(ctx, rest, stdout, stderr)
	case "compare":
		err = compareMain(ctx, rest, stdout, stderr)
	case "partitions":
		err = partitionsMain(ctx, rest, stdout, stderr)
	case "migrate":
		err = migrateMain(ctx, rest, stdout, stderr)
	case "version", "-version", "--version":
		err = versionMain(rest, stdout)
	case "help", "-h", "-help", "--help":
		// "help SUB" is "SUB --help"; help of help is this usage.
		if len(rest) > 0 && !slices.Contains([]string{"help", "-h", "-help", "--help"}, rest[0]) {
			return elect(ctx, []string{rest[0], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, topUsage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "elect: unknown command %q; want run, status, watch, partitions, compare, migrate, version or help\n\n%s", sub, topUsage)
		return exitUsage
	}
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "elect: %s\n", forUser(ee.msg))
		}
		return ee.code
	default:
		fmt.Fprintf(stderr, "elect: %s\n", forUser(err.Error()))
		return exitInternal
	}
}

// newLogger returns the logger for elect's own messages, on stderr.
func newLogger(stderr io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level)) // validated by the flag
	o := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(stderr, o))
	}
	return slog.New(slog.NewTextHandler(stderr, o))
}
