//go:build unix

package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaderkit/elector/cmd/elect/internal/compare"
	"github.com/leaderkit/elector/cmd/elect/internal/testcmd"
	"github.com/leaderkit/elector/internal/testenv"
)

// TestKubeOnceAfterKill9: the winner of an `elect run --once` on a Lease is
// killed with SIGKILL while its command runs. New processes then look, as
// cron would run them: `elect status` reports no leader, and an `elect run
// --once` runs the command, both by the time the holder's last write is the
// TTL plus the apiserver's stamp margins old (3 s: the stamps and the Date
// header are whole seconds, and a reader allows a second of skew between
// apiservers). Each firing waits 1 s, less than the TTL: none could watch
// the Lease for a whole TTL before taking it over.
func TestKubeOnceAfterKill9(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	h := newHub(t)
	url, elec := kubeURL(t), election(t)
	once := func(id string) []string {
		return []string{"run", "--once", "--ttl=" + ttl.String(), "--wait=1s", "--hold=5s",
			"--backend=" + url, "--election=" + elec, "--identity=" + id, "--", cmdBin}
	}
	first := startElect(t, "first", []string{h.childEnv(), testcmd.IgnoreTermEnv + "=1"}, "run", "--once", "--ttl="+ttl.String(),
		"--wait=5s", "--hold=60s", "--backend="+url, "--election="+elec, "--identity=first", "--", cmdBin)
	if e := h.next(20*time.Second, "the first replica's command to start"); !e.hello || e.identity != "first" {
		t.Fatalf("got %v, want the first replica's hello", e)
	}
	first.signal(syscall.SIGKILL)
	crashed := time.Now()
	first.wait(10 * time.Second)
	if e := h.next(10*time.Second, "the killed replica's command to die with it"); e.kind != "bye" {
		t.Fatalf("got %v, want the bye of the killed replica's command", e)
	}

	// The bound: the holder's last write was at most at the crash, and
	// each look takes a few process starts on a loaded machine.
	bound := crashed.Add(ttl + 3*time.Second + 3*time.Second)
	var noLeader, ran time.Time
	for i := 0; ran.IsZero(); i++ {
		if time.Now().After(bound.Add(10 * time.Second)) {
			t.Fatalf("no firing ran the command within %v of the crash (status first reported no leader after %v)", time.Since(crashed).Round(time.Millisecond), since(noLeader, crashed))
		}
		look := time.Now()
		code, out := runElect(t, nil, "status", "--backend="+url, "--election="+elec)
		switch {
		case code == exitNoLeader && strings.Contains(out, "no leader"):
			if noLeader.IsZero() {
				noLeader = look
			}
		case code == 0 && strings.Contains(out, "first"):
		case code == 0 && ran.IsZero():
			t.Fatalf("status %v after the crash: %q; want the dead holder or no leader", look.Sub(crashed), out)
		default:
			t.Fatalf("status %v after the crash: exit %d %q", look.Sub(crashed), code, out)
		}
		fired := time.Now()
		p := startElect(t, "firing", []string{h.childEnv()}, once("firing")...)
		select {
		case e := <-h.events:
			if !e.hello || e.identity != "firing" {
				t.Fatalf("got %v, want the firing's hello", e)
			}
			ran = fired
			e.tell("exit 0")
			if code := p.wait(20 * time.Second); code != 0 {
				t.Errorf("the firing that ran the command: exit %d, want 0", code)
			}
		case <-p.done:
			if out := p.out.String(); p.status != 0 || !strings.Contains(out, "another replica leads") {
				t.Fatalf("firing %d, %v after the crash: exit %d without running the command:\n%s", i, fired.Sub(crashed), p.status, out)
			}
		}
	}
	t.Logf("after the SIGKILL: status first reported no leader after %v, the command first ran from a firing started after %v (TTL %v)",
		since(noLeader, crashed), ran.Sub(crashed).Round(time.Millisecond), ttl)
	// A firing that took over before status looked again makes status
	// report that firing, rightly; status must see no leader otherwise.
	if (noLeader.IsZero() || noLeader.After(bound)) && (ran.IsZero() || ran.After(bound)) {
		t.Errorf("status first reported no leader %v after the crash; want within %v", since(noLeader, crashed), bound.Sub(crashed))
	}
	if ran.After(bound) {
		t.Errorf("the first firing that ran the command started %v after the crash; want within %v", ran.Sub(crashed).Round(time.Millisecond), bound.Sub(crashed))
	}
}

// since describes the time from crashed to at ("never" for the zero time).
func since(at, crashed time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return at.Sub(crashed).Round(time.Millisecond).String()
}

// TestKubeMissingNamespace: status and partitions on a namespace that does
// not exist name it and exit 3 (the backend is unusable as given), instead
// of reporting no leader (exit 1) and an empty table.
func TestKubeMissingNamespace(t *testing.T) {
	const ns = "elector-no-such-namespace"
	url := strings.Replace(kubeURL(t), "namespace=default", "namespace="+ns, 1)
	if !strings.Contains(url, ns) {
		t.Fatalf("ELECTOR_KUBE_URL %q: want namespace=default in it", kubeURL(t))
	}
	want := `namespace "` + ns + `" does not exist`
	for _, args := range [][]string{
		{"status", "--backend=" + url, "--election=" + election(t)},
		{"partitions", "--backend=" + url, "--group=" + election(t), "--partitions=4"},
	} {
		if code, out := runElect(t, nil, args...); code != exitBackend || !strings.Contains(out, want) {
			t.Errorf("elect %s: got exit %d and\n%s\nwant %d and %q", args[0], code, out, exitBackend, want)
		}
	}
}

// TestKubeCompareDefaultTTL: elect compare's default TTL (2 s) is below the
// shortest a Lease accepts when client-go candidates may share it (3 s),
// so the README's `elect compare ... --backend 'kube://?namespace=ops'`
// refused every Campaign and exited 2. Unless --ttl is given, compare now
// runs with the shortest TTL every backend accepts, and says so.
func TestKubeCompareDefaultTTL(t *testing.T) {
	raw := testenv.KubeURL(t) // without elector_only, as in the README
	tg, err := compare.URLTarget(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	if got := ttlFloors(ctx, &out, []compare.Target{tg}, 2*time.Second, false); got != 3*time.Second {
		t.Errorf("default TTL on kube://: got %v, want 3s (the shortest it accepts)\n%s", got, out.String())
	}
	if !strings.Contains(out.String(), "TTL 3s") {
		t.Errorf("output does not say the TTL was raised:\n%s", out.String())
	}
	out.Reset()
	if got := ttlFloors(ctx, &out, []compare.Target{tg}, 2*time.Second, true); got != 2*time.Second || !strings.Contains(out.String(), "refuses every Campaign") {
		t.Errorf("--ttl=2s on kube://: got %v and\n%s\nwant 2s kept, with a warning", got, out.String())
	}
}
