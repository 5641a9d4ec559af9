//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestUsageErrors runs elect with bad flags, environment variables, URLs
// and commands: each is refused before any backend is contacted, with a
// message naming the problem and the documented exit code.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	const ok = "--backend=etcd://127.0.0.1:1 --election=e"
	for _, tc := range []struct {
		args string
		env  []string
		code int
		want string
	}{
		{"", nil, exitUsage, "Usage:"},
		{"frobnicate", nil, exitUsage, `unknown command "frobnicate"`},
		{"run -- true", nil, exitUsage, "set --backend or ELECT_BACKEND"},
		{"run --backend=etcd://h -- true", nil, exitUsage, "set --election or ELECT_ELECTION"},
		{"run --backend=consul://h --election=e -- true", nil, exitUsage, `unknown scheme "consul"; want one of etcd, etcds, kube, migrate+both, migrate+done, migrate+new, migrate+old, redis, rediss, zk, zks`},
		{"run --backend=redis://h1?prefx=a --election=e -- true", nil, exitUsage, `unknown query parameter "prefx"`},
		{"run --backend=127.0.0.1:6379 --election=e -- true", nil, exitUsage, "is not a backend URL"},
		{"run " + ok + " --ttl=5 -- true", nil, exitUsage, `invalid value "5" for flag --ttl`},
		{"run " + ok + " --ttl=50ms -- true", nil, exitUsage, "--ttl 50ms; want between 100ms and 1h0m0s"},
		{"run " + ok + " --bogus -- true", nil, exitUsage, "flag provided but not defined: --bogus"},
		{"run " + ok + " --on-exit=retry -- true", nil, exitUsage, `--on-exit "retry": want exit, restart or resign`},
		{"run " + ok + " --once --hold=1s --wait=5s -- true", nil, exitUsage, "want --hold >= --wait"},
		{"run " + ok + " --grace=-1s -- true", nil, exitUsage, "--grace is -1s"},
		{"run " + ok + " --log-level=loud -- true", nil, exitUsage, "--log-level"},
		{"run " + ok, nil, exitUsage, "no command"},
		{"run " + ok + " -- /no/such/command", nil, exitNotFound, "/no/such/command"},
		{"run " + ok + " -- /dev/null", nil, exitCannotRun, "permission denied"},
		{"run --election=e -- true", []string{"ELECT_BACKEND=zk://h?prefix=/zookeeper"}, exitUsage, "zookeeper"},
		{"run --election=e --backend=zk://h?disconnect_grace=soon -- true", nil, exitUsage, `disconnect_grace="soon"`},
		{"run " + ok + " -- true", []string{"ELECT_TTL=soon"}, exitUsage, `environment variable ELECT_TTL="soon"`},
		{"run --election= --backend=etcd://h -- true", nil, exitUsage, "set --election"},
		{"status " + ok + " extra", nil, exitUsage, `status: unexpected argument "extra"`},
		{"watch " + ok + " --json=maybe", nil, exitUsage, "watch: invalid boolean value"},
		{"status --election=e --backend=redis://u:s3cret@h?x=1", nil, exitUsage, "redis://*@h?x=1"},
		{"status --election=e --backend=migrate+both://?old=redis%3A%2F%2Fu%3As3cret%40h&new=etcd%3A%2F%2Fh2&bogus=1", nil, exitUsage, `"migrate+both://?old=redis%3A%2F%2F*%40h&new=`},
		{"run " + ok + " --ttl=9000000000s -- true", nil, exitUsage, "elector: --ttl 2500000h0m0s; want between"},
		{"status --election=e --backend=redis://h?request_timeout=20s", nil, exitUsage, "query parameter request_timeout is 20s; want 1ms to 10s"},
		{"status --election=e --backend=etcd://h?request_timeout=-1s", nil, exitUsage, "query parameter request_timeout is -1s; want >= 0"},
		{"status --election=e --backend=zk://h?prefix=/zookeeper/x", nil, exitUsage, `query parameter prefix is "/zookeeper/x"; want a path outside /zookeeper`},
		{"compare --backend=redis://h --trials=-1", nil, exitUsage, "--trials -1; want 0 (default) or 1 to"},
		{"partitions --backend=redis://h --group=g --partitions=x", nil, exitUsage, `invalid value "x" for flag --partitions`},
	} {
		code, out := runElect(t, tc.env, strings.Fields(tc.args)...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("elect %s: got exit %d and\n%s\nwant exit %d and output containing %q", tc.args, code, out, tc.code, tc.want)
		}
		if strings.Contains(out, "Options.") || strings.Contains(out, "Candidate.") {
			t.Errorf("elect %s: output names a Go field instead of a flag or URL parameter:\n%s", tc.args, out)
		}
		if strings.Contains(out, "s3cret") {
			t.Errorf("elect %s: output shows the password:\n%s", tc.args, out)
		}
		if strings.HasPrefix(tc.args, "compare") && strings.Contains(out, "elections under") {
			t.Errorf("elect %s: compare announced its run before refusing its flags:\n%s", tc.args, out)
		}
	}
}

// TestHelp shows that --help and help print readable usage on stdout and
// exit 0.
func TestHelp(t *testing.T) {
	for args, want := range map[string][]string{
		"help":            {"elect run", "Exit codes:", "127"},
		"run --help":      {"Usage: elect run", "--once", "[ELECT_HOLD, default 10s]", "ELECT_TERM_TOKEN"},
		"help status":     {"Usage: elect status", "--json", "[ELECT_TIMEOUT, default 5s]"},
		"watch -h":        {"Usage: elect watch"},
		"help run extra":  {"Usage: elect run"},
		"help partitions": {"Usage: elect partitions", "--partitions number", "[ELECT_PARTITIONS]"},
		// help of help is the top usage, not a recursion without end.
		"help --help": {"elect run", "Exit codes:"},
		"help -h":     {"elect run", "Exit codes:"},
		"--help help": {"elect run", "Exit codes:"},
	} {
		code, out := runElect(t, nil, strings.Fields(args)...)
		if code != 0 {
			t.Errorf("elect %s: exit %d, want 0", args, code)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("elect %s: output lacks %q:\n%s", args, w, out)
			}
		}
	}
}

// TestUnreachableBackend: with nothing listening, status and run --once
// give up with exit code 3 and say why.
func TestUnreachableBackend(t *testing.T) {
	for _, tc := range []struct {
		args string
		want string
	}{
		// A timeout longer than the driver's patience (3 s) to name the
		// cause: with 1 s, a busy CI machine printed only the timeout.
		{"status --timeout=5s --backend=zk://127.0.0.1:1 --election=e", "connection refused"},
		{"status --timeout=500ms --backend=etcd://127.0.0.1:1 --election=e", "status: no answer from the backend within --timeout 500ms"},
		// With credentials the etcd client authenticates before it
		// returns, and said only "context deadline exceeded".
		{"status --timeout=2s --backend=etcd://u:pw@127.0.0.1:1 --election=e", "connection refused"},
		{"run --once --wait=300ms --hold=1s --backend=redis://127.0.0.1:1 --election=e -- true", "not elected within --wait 300ms, and no other leader seen"},
	} {
		code, out := runElect(t, nil, strings.Fields(tc.args)...)
		if code != exitBackend || !strings.Contains(out, tc.want) {
			t.Errorf("elect %s: got exit %d and\n%s\nwant exit 3 and output containing %q", tc.args, code, out, tc.want)
		}
	}
}
