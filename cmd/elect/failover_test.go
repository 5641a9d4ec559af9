//go:build unix

package main

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/leaderkit/elector/cmd/elect/internal/testcmd"
	"github.com/leaderkit/elector/internal/testproxy"
)

// TestKilledLeaderHandsOver runs three `elect run` replicas whose command
// reports to the test when it starts and when it dies. Killing the leading
// elect with SIGKILL kills its command (the kernel's parent-death signal)
// and another replica takes over after the TTL; stopping the next leader
// with SIGTERM stops its command, releases the lease (the third replica
// takes over at once), and exits 0.
func TestKilledLeaderHandsOver(t *testing.T) {
	t.Parallel()
	for _, name := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Long enough that a lease left to lapse after the SIGTERM,
			// renewed at most a RenewInterval (TTL/3) before it, would
			// elect the third replica past half the TTL: seconds after
			// a release does on a loaded machine.
			const ttl = 10 * time.Second
			h := newHub(t)
			url, elec := backendURL(t, name, nil), election(t)
			procs := map[string]*proc{}
			for i := range 3 {
				id := fmt.Sprintf("replica-%d", i)
				procs[id] = startElect(t, id, []string{h.childEnv()}, "run", "--ttl="+ttl.String(), "--grace=5s",
					"--backend="+url, "--election="+elec, "--identity="+id, "--", cmdBin)
			}
			first := h.next(30*time.Second, "the first leader's command to start")
			if !first.hello {
				t.Fatalf("got %v, want a hello", first)
			}

			killed := time.Now()
			procs[first.identity].signal(syscall.SIGKILL)
			bye := h.next(10*time.Second, "the killed leader's command to die")
			if bye.hello || bye.identity != first.identity {
				t.Fatalf("got %v, want the bye of %s's command", bye, first.identity)
			}
			second := h.next(3*ttl+5*time.Second, "a new leader's command to start")
			if !second.hello || second.identity == first.identity || second.token <= first.token {
				t.Fatalf("got %v after %v, want a hello from another replica with a token above %d", second, first, first.token)
			}
			t.Logf("%s: SIGKILL: command died after %v, successor's command started after %v",
				name, bye.at.Sub(killed).Round(time.Millisecond), second.at.Sub(killed).Round(time.Millisecond))

			stopped := time.Now()
			procs[second.identity].signal(syscall.SIGTERM)
			bye = h.next(10*time.Second, "the stopped leader's command to die")
			if bye.hello || bye.identity != second.identity {
				t.Fatalf("got %v, want the bye of %s's command", bye, second.identity)
			}
			if code := procs[second.identity].wait(10 * time.Second); code != 0 {
				t.Errorf("%s stopped by SIGTERM: exit %d, want 0", second.identity, code)
			}
			third := h.next(10*time.Second, "the third replica's command to start")
			if !third.hello || third.identity == first.identity || third.identity == second.identity {
				t.Fatalf("got %v, want a hello from the third replica", third)
			}
			if took := third.elected.Sub(stopped); took >= ttl/2 {
				t.Errorf("the third replica was elected %v after the SIGTERM; want within half the TTL %v (the lease was released)", took.Round(time.Millisecond), ttl)
			}
			t.Logf("%s: SIGTERM: command died after %v, successor elected after %v, its command started after %v", name,
				bye.at.Sub(stopped).Round(time.Millisecond), third.elected.Sub(stopped).Round(time.Millisecond), third.at.Sub(stopped).Round(time.Millisecond))
			procs[third.identity].signal(syscall.SIGTERM)
			if code := procs[third.identity].wait(10 * time.Second); code != 0 {
				t.Errorf("%s stopped by SIGTERM: exit %d, want 0", third.identity, code)
			}
			if e := h.next(10*time.Second, "the last command's bye"); e.hello {
				t.Errorf("got %v, want a bye", e)
			}
		})
	}
}

// TestCutOffLeaderStopsCommand partitions the leading elect from every
// server of its backend (through proxies the test controls): its command
// must die before the lease can expire, hence before the other replica's
// command starts.
func TestCutOffLeaderStopsCommand(t *testing.T) {
	t.Parallel()
	for _, name := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The cut-off leader steps down at most TTL - margin after the
			// cut and kills its command half the margin later: 5.5 s
			// before the TTL with the widest margin allowed (under
			// TTL/2). Killed after --grace, it would die long past it.
			const ttl, margin = 24 * time.Second, 11 * time.Second
			h := newHub(t)
			var proxies []*testproxy.Proxy
			via := func(addr string) string {
				p := testproxy.New(t, addr)
				proxies = append(proxies, p)
				return p.Addr()
			}
			elec := election(t)
			args := func(url, id string) []string {
				return []string{"run", "--ttl=" + ttl.String(), "--safety-margin=" + margin.String(), "--grace=60s", "--backend=" + url,
					"--election=" + elec, "--identity=" + id, "--", cmdBin}
			}
			// Its command ignores SIGTERM: only the SIGKILL that elect sends
			// well before the lease's deadline, not after --grace, stops it.
			leader := startElect(t, "cut", []string{h.childEnv(), testcmd.IgnoreTermEnv + "=1"}, args(backendURL(t, name, via), "cut")...)
			if e := h.next(30*time.Second, "the proxied replica's command to start"); !e.hello || e.identity != "cut" {
				t.Fatalf("got %v, want the hello of the proxied replica", e)
			}
			other := startElect(t, "other", []string{h.childEnv()}, args(backendURL(t, name, nil), "other")...)

			cut := time.Now()
			for _, p := range proxies {
				p.Partition()
			}
			bye := h.next(2*ttl, "the cut-off leader's command to die")
			if bye.hello || bye.identity != "cut" {
				t.Fatalf("got %v, want the bye of the cut-off leader's command", bye)
			}
			next := h.next(3*ttl+5*time.Second, "the other replica's command to start")
			if !next.hello || next.identity != "other" {
				t.Fatalf("got %v, want the hello of the other replica", next)
			}
			if died := bye.at.Sub(cut); died >= ttl {
				t.Errorf("the cut-off leader's command died %v after the cut; want it dead within the TTL %v", died, ttl)
			}
			t.Logf("%s: command died %v after the cut; successor's command started %v after it",
				name, bye.at.Sub(cut).Round(time.Millisecond), next.at.Sub(cut).Round(time.Millisecond))
			for _, p := range []*proc{leader, other} {
				p.signal(syscall.SIGTERM)
				if code := p.wait(15 * time.Second); code != 0 {
					t.Errorf("%s stopped by SIGTERM: exit %d, want 0", p.name, code)
				}
			}
		})
	}
}
