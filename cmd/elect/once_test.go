//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/cmd/elect/internal/testcmd"
	"github.com/leaderkit/elector/internal/testproxy"
)

// TestOnceHoldsAfterTheCommand: a replica whose cron fires after the
// winner's command has finished, but within --hold, does not run it again.
func TestOnceHoldsAfterTheCommand(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	url, elec := backendURL(t, "etcd", nil), election(t)
	// --hold outlasts the start of the late replica's race-built elect on
	// a loaded machine by seconds.
	args := []string{"run", "--once", "--wait=2s", "--hold=15s", "--backend=" + url, "--election=" + elec, "--", cmdBin}
	first := startElect(t, "first", []string{h.childEnv()}, args...)
	hello := h.next(20*time.Second, "the first replica's command to start")
	hello.tell("exit 0")
	if e := h.next(5*time.Second, "the command to finish"); e.kind != "bye" {
		t.Fatalf("got %v, want a bye", e)
	}
	// The command could not finish without the test telling it to: if the
	// late replica ran it, it would not exit.
	code, out := runElect(t, []string{h.childEnv()}, args...)
	if code != 0 || !strings.Contains(out, "another replica leads; not running the command") {
		t.Errorf("late replica: got exit %d and\n%s\nwant 0 without running the command", code, out)
	}
	if code := first.wait(30 * time.Second); code != 0 {
		t.Errorf("first replica: exit %d, want 0 (its command's status)", code)
	}
}

// TestOnceLostWhileRunning: a --once replica cut off from its backend while
// its command runs stops the command and exits 4, not the command's status.
func TestOnceLostWhileRunning(t *testing.T) {
	t.Parallel() // it cuts proxies of its own, not the servers
	h := newHub(t)
	var proxies []*testproxy.Proxy
	url := backendURL(t, "redis", func(addr string) string {
		p := testproxy.New(t, addr)
		proxies = append(proxies, p)
		return p.Addr()
	})
	// The step-down comes at most TTL - margin after the cut, and the
	// command's SIGKILL half the margin later: 5.5 s before the TTL, with
	// the widest margin allowed (under TTL/2).
	const ttl = 24 * time.Second
	p := startElect(t, "once", []string{h.childEnv(), testcmd.IgnoreTermEnv + "=1"}, "run", "--once", "--ttl="+ttl.String(), "--safety-margin=11s",
		"--wait=2s", "--hold=2s", "--grace=60s", "--backend="+url, "--election="+election(t), "--", cmdBin)
	h.next(20*time.Second, "the command to start")
	cut := time.Now()
	for _, px := range proxies {
		px.Partition()
	}
	if e := h.next(2*ttl, "the command to be killed"); e.kind != "bye" {
		t.Fatalf("got %v, want a bye", e)
	} else if died := e.at.Sub(cut); died >= ttl {
		t.Errorf("the command died %v after the cut; want within the TTL (%v), despite --grace=60s", died, ttl)
	}
	if code := p.wait(10 * time.Second); code != exitLost {
		t.Errorf("exit %d, want %d (lost while the command ran)", code, exitLost)
	}
	if out := p.out.String(); !strings.Contains(out, "lease lost") || !strings.Contains(out, "elect: run --once: leadership was lost") {
		t.Errorf("output does not end saying that leadership was lost (a final elect: line):\n%s", out)
	}
}
