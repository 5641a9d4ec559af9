//go:build unix

package main

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitOutput waits until p's output contains want, and fails t after
// timeout.
func waitOutput(t *testing.T, p *proc, want string, timeout time.Duration) {
	t.Helper()
	p.awaitOutput(timeout, strconv.Quote(want), func(out string) bool { return strings.Contains(out, want) })
}

// failingFor finds how long campaigning had failed in each "campaign
// failed" line of elect's log.
var failingFor = regexp.MustCompile(`msg="campaign failed; retrying".* failing_for=(\S+)`)

// healthz returns the status code and body of GET /healthz on addr, or 0
// while nothing answers there yet.
func healthz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUnreachableBackendIsLoud: elect run and elect watch against a backend
// that refuses connections warn within 5 s naming the cause, and run's
// /healthz turns 503
// once campaigning has failed for longer than the TTL, on every backend
// (a silent, healthy-looking elect that never campaigns hides an outage).
func TestUnreachableBackendIsLoud(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"etcd://127.0.0.1:1", "zk://127.0.0.1:1"} {
		t.Run(strings.Split(url, ":")[0], func(t *testing.T) {
			t.Parallel()
			addr := freeAddr(t)
			p := startElect(t, "run", nil, "run", "--ttl=2s", "--log-level=debug", "--metrics-addr="+addr,
				"--backend="+url, "--election="+election(t), "--", "true")
			w := startElect(t, "watch", nil, "watch", "--backend="+url, "--election=x")
			// 5 s is the aim; the slack is for a loaded machine running a
			// -race build, whose start alone can take seconds: etcd names
			// the cause only once its request timeout (3 s) has passed.
			began := time.Now()
			waitOutput(t, w, "connection refused", 15*time.Second)
			t.Logf("watch warned naming the cause after %v", time.Since(began).Round(time.Millisecond))
			waitOutput(t, p, "campaign failed", 15*time.Second)
			t.Logf("run warned after %v", time.Since(began).Round(time.Millisecond))
			if out := p.out.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "connection refused") {
				t.Errorf("the first campaign warning does not name the cause (want level=WARN and \"connection refused\"):\n%s", out)
			}
			// /healthz turns 503 once campaigning has failed for longer
			// than the TTL: a failure logged (at Debug) past the TTL means
			// that the next request must get 503.
			p.awaitOutput(15*time.Second, "a campaign failure logged more than the TTL of 2s after the first", func(out string) bool {
				for _, m := range failingFor.FindAllStringSubmatch(out, -1) {
					if d, err := time.ParseDuration(m[1]); err == nil && d > 2*time.Second {
						return true
					}
				}
				return false
			})
			if code, body := healthz(addr); code != http.StatusServiceUnavailable ||
				!strings.Contains(body, "campaigning has failed for") || !strings.Contains(body, "connection refused") {
				t.Errorf("/healthz after campaigning failed for longer than the TTL: got %d %q, want 503 with how long campaigning has failed and the cause", code, body)
			}
			for _, p := range []*proc{p, w} {
				p.signal(syscall.SIGTERM)
				if code := p.wait(10 * time.Second); code != 0 {
					t.Errorf("%s stopped by SIGTERM: exit %d, want 0", p.name, code)
				}
			}
		})
	}
}

// TestDownAtStartIsNotUsage: a backend merely down at start is retried by
// run, and reported by status with exit 3, never a usage error (exit 2);
// a URL that can never work still is one.
func TestDownAtStartIsNotUsage(t *testing.T) {
	t.Parallel()
	down := []string{
		"etcd://root:secret@127.0.0.1:1",   // client authenticates at open: was exit 2 after 5 s
		"zk://user:secret@127.0.0.1:1",     // was exit 2 at once
		"zk://no-such-host.invalid:2181",   // a name that does not resolve yet
		"etcd://no-such-host.invalid:2379", // likewise
	}
	for _, url := range down {
		t.Run("status "+url, func(t *testing.T) {
			t.Parallel()
			code, out := runElect(t, nil, "status", "--timeout=2s", "--backend="+url, "--election=x")
			if code != exitBackend {
				t.Errorf("status: exit %d, want %d (backend unreachable):\n%s", code, exitBackend, out)
			}
			if strings.Contains(out, "session_timeout") || strings.Contains(out, "secret") {
				t.Errorf("status: output shows what the user did not type, or the password:\n%s", out)
			}
		})
		t.Run("run "+url, func(t *testing.T) {
			t.Parallel()
			p := startElect(t, "run", nil, "run", "--backend="+url, "--election=x", "--", "true")
			waitOutput(t, p, "level=WARN", 20*time.Second)
			p.signal(syscall.SIGTERM)
			if code := p.wait(15 * time.Second); code != 0 {
				t.Errorf("run stopped by SIGTERM while the backend was down: exit %d, want 0:\n%s", code, p.out.String())
			}
			if strings.Contains(p.out.String(), "secret") {
				t.Errorf("run: output shows the password:\n%s", p.out.String())
			}
		})
	}
	t.Run("run --once", func(t *testing.T) {
		t.Parallel()
		began := time.Now()
		code, out := runElect(t, nil, "run", "--once", "--wait=2s", "--hold=2s", "--backend=etcd://root:secret@127.0.0.1:1", "--election=x", "--", "true")
		if code != exitBackend {
			t.Errorf("run --once with the backend down: exit %d, want %d:\n%s", code, exitBackend, out)
		}
		if took := time.Since(began); took > 10*time.Second {
			t.Errorf("run --once --wait=2s with the backend down took %v", took)
		}
	})
	for _, url := range []string{"etcd://127.0.0.1:2379?bogus=1", "zk//127.0.0.1:2181", "etcd://127.0.0.1:2379:1"} {
		t.Run("usage "+url, func(t *testing.T) {
			t.Parallel()
			if code, out := runElect(t, nil, "run", "--backend="+url, "--election=x", "--", "true"); code != exitUsage {
				t.Errorf("run with a bad URL: exit %d, want %d:\n%s", code, exitUsage, out)
			}
		})
	}
}
