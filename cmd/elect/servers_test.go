//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaderkit/elector/internal/testenv"
)

// backendURL returns the URL of the named backend's real servers, each
// address passed through via (nil: directly).
func backendURL(t *testing.T, name string, via func(addr string) string) string {
	t.Helper()
	if name == "kube" {
		if via != nil {
			t.Fatal("backendURL: kube: no URL through proxies")
		}
		return kubeURL(t)
	}
	if via == nil {
		via = func(a string) string { return a }
	}
	list := func(addrs []string) string {
		out := make([]string, len(addrs))
		for i, a := range addrs {
			out[i] = via(a)
		}
		return strings.Join(out, ",")
	}
	switch name {
	case "redis":
		return "redis://" + list(testenv.RedisAddrs(t)) + "?prefix=elect-test:"
	case "etcd":
		return "etcd://" + list(testenv.EtcdEndpoints(t)) + "?prefix=/elect-test/"
	case "zk":
		return "zk://" + list(testenv.ZKServers(t)) + "?prefix=/elect-test"
	}
	t.Fatalf("no backend %q", name)
	return ""
}

var backends = []string{"redis", "etcd", "zk"}

// election returns a fresh election name for a test.
func election(t *testing.T) string {
	return fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
}

// TestOnceRunsExactlyOnce fires five `elect run --once` at once, as five
// replicas' cron would: the command runs exactly once, and all five exit 0.
// --wait leaves room for a store that answers late on a loaded machine, and
// --hold outlasts it, so that no replica still waiting is elected after the
// leader let go; nor, with a TTL a loaded machine does not cost the term of,
// before.
func TestOnceRunsExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, name := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "runs")
			args := []string{"run", "--once", "--wait=8s", "--hold=10s", "--ttl=10s",
				"--backend=" + backendURL(t, name, nil), "--election=" + election(t),
				"--", "sh", "-c", `echo "$ELECT_TERM_IDENTITY $ELECT_TERM_TOKEN" >> "$RUNS"`}
			var wg sync.WaitGroup
			procs := make([]*proc, 5)
			for i := range procs {
				procs[i] = startElect(t, fmt.Sprintf("replica %d", i), []string{"RUNS=" + out}, args...)
			}
			for i, p := range procs {
				wg.Go(func() {
					if code := p.wait(30 * time.Second); code != 0 {
						t.Errorf("replica %d: exit %d, want 0", i, code)
					}
				})
			}
			wg.Wait()
			skipped := 0
			for _, p := range procs {
				if strings.Contains(p.out.String(), "another replica leads; not running the command") {
					skipped++
				}
			}
			if skipped != len(procs)-1 {
				t.Errorf("%d replicas said another replica leads; want %d", skipped, len(procs)-1)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("the command never ran: %v", err)
			}
			if runs := strings.Split(strings.TrimSpace(string(b)), "\n"); len(runs) != 1 {
				t.Errorf("the command ran %d times, want once: %q", len(runs), runs)
			}
		})
	}
}

// TestOnceExitStatus shows that the command's exit status comes back from
// the replica that ran it.
func TestOnceExitStatus(t *testing.T) {
	t.Parallel()
	code, out := runElect(t, nil, "run", "--once", "--wait=2s", "--hold=2s", "--backend="+backendURL(t, "etcd", nil),
		"--election="+election(t), "--", "sh", "-c", "exit 7")
	if code != 7 {
		t.Errorf("exit %d, want the command's 7:\n%s", code, out)
	}
	code, out = runElect(t, nil, "run", "--once", "--wait=2s", "--hold=2s", "--backend="+backendURL(t, "etcd", nil),
		"--election="+election(t), "--", "sh", "-c", "kill -USR1 $$")
	if code != 128+int(syscall.SIGUSR1) {
		t.Errorf("exit %d, want 128+SIGUSR1 = %d:\n%s", code, 128+int(syscall.SIGUSR1), out)
	}
}

// TestCommandEnvironmentHasNoElectSettings: no ELECT_* variable of elect's
// environment other than the term's reaches the command, whichever
// subcommand's flag it sets: ELECT_OLD and ELECT_NEW carry URLs with
// passwords just as ELECT_BACKEND does. An inherited ELECT_TERM_* is
// replaced by the term's own.
func TestCommandEnvironmentHasNoElectSettings(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	secret := "redis://admin:s3cret@127.0.0.1:1"
	env := []string{"OUT=" + out, "ELECT_OLD=" + secret, "ELECT_NEW=" + secret, "ELECT_PHASE=both",
		"ELECT_GROUP=g", "ELECT_PARTITIONS=4", "ELECT_TRIALS=3", "ELECT_HTML=/tmp/x.html",
		"ELECT_SOMETHING_ELSE=" + secret, "ELECT_TERM_TOKEN=999999", "ELECT_TERM_EXTRA=stale"}
	code, log := runElect(t, env, "run", "--once", "--wait=2s", "--hold=2s", "--identity=env-test",
		"--backend="+backendURL(t, "redis", nil), "--election="+election(t), "--", "sh", "-c", `env > "$OUT"`)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, log)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var term []string
	for l := range strings.Lines(string(b)) {
		l = strings.TrimSuffix(l, "\n")
		switch k, v, _ := strings.Cut(l, "="); {
		case k == "ELECT_TERM_TOKEN" && v == "999999", k == "ELECT_TERM_EXTRA":
			t.Errorf("the command's environment holds the inherited %s: want only the term's own ELECT_TERM_*", l)
		case strings.HasPrefix(k, "ELECT_TERM_"):
			term = append(term, k)
		case strings.HasPrefix(k, "ELECT_"), strings.Contains(v, "s3cret"):
			t.Errorf("the command's environment holds %s: want no ELECT_* but the term's", l)
		}
	}
	slices.Sort(term)
	if want := []string{"ELECT_TERM_ELECTION", "ELECT_TERM_IDENTITY", "ELECT_TERM_START", "ELECT_TERM_TOKEN"}; !slices.Equal(term, want) {
		t.Errorf("the command's ELECT_TERM_* variables: got %v, want %v", term, want)
	}
}

// TestCommandEnvironment: the command sees the term, and not elect's own
// settings (which may carry credentials).
func TestCommandEnvironment(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	elec := election(t)
	code, log := runElect(t, []string{"ELECT_BACKEND=" + backendURL(t, "zk", nil), "ELECT_ELECTION=" + elec, "OUT=" + out},
		"run", "--once", "--wait=2s", "--hold=2s", "--identity=env-test", "--",
		"sh", "-c", `echo "${ELECT_BACKEND-unset} ${ELECT_ELECTION-unset} $ELECT_TERM_ELECTION $ELECT_TERM_IDENTITY $ELECT_TERM_TOKEN" > "$OUT"`)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, log)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 5 || f[0] != "unset" || f[1] != "unset" || f[2] != elec || f[3] != "env-test" || f[4] == "0" {
		t.Errorf("command's environment: got %q; want ELECT_BACKEND and ELECT_ELECTION unset, then %s env-test and a token", b, elec)
	}
}
