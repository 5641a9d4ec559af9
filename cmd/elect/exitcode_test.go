//go:build unix

package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/internal/testproxy"
)

// TestExitCodeRule holds every subcommand to the one rule of docs/elect.md
// (section Exit codes): 2 for what the user must change (flags, URLs, a TTL
// the backend refuses, credentials the server refuses at the first
// request: a wrong password or token, a user no Role binds), 3 for a
// backend that cannot be reached, 1 for no leader or not
// elected. Each row runs a real elect against the real servers.
func TestExitCodeRule(t *testing.T) {
	t.Parallel()
	// Redis's requests get 2s, not 100ms: a loaded machine answers late.
	redisURL := backendURL(t, "redis", nil) + "&request_timeout=2s"
	etcdURL, zkURL := backendURL(t, "etcd", nil), backendURL(t, "zk", nil)
	// The ACL user exists; its password is wrong: Redis answers WRONGPASS.
	wrongPass := "redis://elector:wrong@" + testenv.RedisAuthAddr(t) + "?request_timeout=2s"
	const down = "redis://127.0.0.1:1"
	// The apiserver authenticates nobody and forbids it everything (403);
	// it knows no user of badToken's token (401).
	nobody := testenv.KubeNobodyURL(t) + "&elector_only=true"
	badTokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(badTokenFile, []byte("no-such-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badToken := regexp.MustCompile(`token_file=[^&]*`).ReplaceAllLiteralString(kubeURL(t), "token_file="+badTokenFile)
	migrateDone := func(old string) string {
		return "migrate+done://?old=" + url.QueryEscape(old) + "&new=" + url.QueryEscape(etcdURL)
	}
	elec := election(t)
	for _, tc := range []struct {
		args string
		code int
		want string
	}{
		// 2: flags and URLs, whatever time is left.
		{"status --timeout=0 --backend=" + redisURL + " --election=e", exitUsage, "--timeout is 0s; want a positive duration"},
		{"status --timeout=-1s --backend=" + redisURL + " --election=e", exitUsage, "--timeout is -1s"},
		{"migrate cleanup --timeout=0s --backend=x --election=e", exitUsage, "--timeout is 0s"},
		{"migrate cleanup --timeout=1ns --backend=x --election=e", exitUsage, "is not a backend URL"},
		{"status --timeout=1ms --backend=redis://h?prefx=a --election=e", exitUsage, `unknown query parameter "prefx"`},
		// 2: a TTL the backend refuses (the test ensemble needs 1.75s).
		{"run --ttl=1s --backend=" + zkURL + " --election=" + elec + " -- true", exitUsage, "--ttl"},
		{"run --once --ttl=1s --backend=" + zkURL + " --election=" + elec + " -- true", exitUsage, "--ttl"},
		// 2: credentials the server refuses at the first request.
		{"run --backend=" + wrongPass + " --election=e -- true", exitUsage, "refuses elect's credentials"},
		{"run --once --backend=" + wrongPass + " --election=e -- true", exitUsage, "refuses elect's credentials"},
		{"status --backend=" + wrongPass + " --election=e", exitUsage, "WRONGPASS"},
		{"watch --backend=" + wrongPass + " --election=e", exitUsage, "refuses elect's credentials"},
		{"partitions --group=g --partitions=2 --backend=" + wrongPass, exitUsage, "refuses elect's credentials"},
		{"migrate cleanup --election=e --backend=" + migrateDone(wrongPass), exitUsage, "refuses elect's credentials"},
		{"compare --short --backend=" + wrongPass, exitUsage, "WRONGPASS"},
		{"run --backend=" + nobody + " --election=e -- true", exitUsage, "refuses elect's credentials"},
		{"run --once --backend=" + nobody + " --election=e -- true", exitUsage, "refuses elect's credentials"},
		{"status --backend=" + nobody + " --election=e", exitUsage, "forbidden"},
		{"watch --backend=" + nobody + " --election=e", exitUsage, "refuses elect's credentials"},
		{"partitions --group=g --partitions=2 --backend=" + nobody, exitUsage, "refuses elect's credentials"},
		{"run --backend=" + badToken + " --election=e -- true", exitUsage, "refuses elect's credentials"},
		{"status --backend=" + badToken + " --election=e", exitUsage, "Unauthorized"},
		// 3: a backend that cannot be reached.
		{"status --timeout=1s --backend=" + down + " --election=e", exitBackend, "connection refused"},
		{"partitions --timeout=1s --group=g --partitions=2 --backend=" + down, exitBackend, "connection refused"},
		{"migrate cleanup --timeout=1s --election=e --backend=" + migrateDone(down), exitBackend, ""},
		{"run --once --wait=500ms --hold=1s --backend=" + down + " --election=e -- true", exitBackend, "no other leader seen"},
		{"compare --short --backend=" + down, exitBackend, "does not answer"},
		// 1: no leader.
		{"status --backend=" + etcdURL + " --election=" + elec, exitNoLeader, "no leader"},
		{"partitions --group=" + elec + " --partitions=2 --backend=" + etcdURL, exitNoLeader, "2 unowned"},
		{"migrate cleanup --election=" + elec + " --backend=" + migrateDone(redisURL), exitUsage, "nothing was changed"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			t.Parallel()
			code, out := runElect(t, nil, strings.Fields(tc.args)...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("elect %s:\ngot exit %d and\n%s\nwant exit %d and output containing %q", tc.args, code, out, tc.code, tc.want)
			}
			if strings.Contains(out, "Options.") || strings.Contains(out, "Candidate.") {
				t.Errorf("elect %s: output names a Go field instead of a flag or URL parameter:\n%s", tc.args, out)
			}
			if strings.Contains(out, "wrong@") {
				t.Errorf("elect %s: output shows the password:\n%s", tc.args, out)
			}
		})
	}
}

// TestWatchUnknownWhileBlind: elect watch cut off from the backend says
// that the leader is unknown ("unknown":true in JSON) instead of leaving
// the last leader standing while that leader steps down, and prints the
// leader again once it can read the backend.
func TestWatchUnknownWhileBlind(t *testing.T) {
	var proxies []*testproxy.Proxy
	via := backendURL(t, "etcd", func(addr string) string {
		p := testproxy.New(t, addr)
		proxies = append(proxies, p)
		return p.Addr()
	})
	h := newHub(t)
	elec := election(t)
	// A TTL that a loaded machine does not cost the term of: watch's first
	// line must show this leader.
	leader := startElect(t, "leader", []string{h.childEnv()}, "run", "--ttl=20s", "--backend="+backendURL(t, "etcd", nil),
		"--election="+elec, "--identity=the-leader", "--", cmdBin)
	h.next(20*time.Second, "the leader's command to start")
	w := startElectPipe(t, "watch", nil, "watch", "--json", "--backend="+via, "--election="+elec)
	if got := w.nextLine(20 * time.Second); !strings.Contains(got, `"identity":"the-leader"`) {
		t.Fatalf("watch's first line: got %q, want the-leader", got)
	}
	for _, p := range proxies {
		p.Partition()
	}
	leader.signal(syscall.SIGTERM) // steps down while watch cannot see it
	if code := leader.wait(10 * time.Second); code != 0 {
		t.Fatalf("leader stopped by SIGTERM: exit %d", code)
	}
	var j holderJSON
	got := w.nextLine(10 * time.Second)
	if err := json.Unmarshal([]byte(got), &j); err != nil || !j.Unknown || j.Leader || j.Error == "" {
		t.Fatalf("watch cut off from the backend: got %q, want a line with \"unknown\":true and the error", got)
	}
	for _, p := range proxies {
		p.Heal()
	}
	got = w.nextLine(15 * time.Second)
	if j = (holderJSON{}); json.Unmarshal([]byte(got), &j) != nil || j.Unknown || j.Leader {
		t.Errorf("watch after the cut healed: got %q, want no leader, known", got)
	}
	w.signal(syscall.SIGINT)
	w.wait(10 * time.Second)
}

// TestMigrateURLOldFirst: migrate url prints old= before new=, as the
// runbook reads.
func TestMigrateURLOldFirst(t *testing.T) {
	code, out := runElect(t, nil, "migrate", "url", "--phase=both", "--old=redis://h1", "--new=etcd://h2")
	if want := "migrate+both://?old=redis%3A%2F%2Fh1&new=etcd%3A%2F%2Fh2\n"; code != 0 || out != want {
		t.Errorf("migrate url: got exit %d and %q, want 0 and %q", code, out, want)
	}
}
