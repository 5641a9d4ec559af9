//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/partition"
)

// kubeURL returns the kube:// URL of the test kube-apiserver with
// elector_only set: no client-go candidate runs on the tests' Leases, so
// the driver accepts the 1-2 s TTLs the tests use.
func kubeURL(t *testing.T) string {
	return testenv.KubeURL(t) + "&elector_only=true"
}

// TestKubeRunStatusWatch runs two `elect run` replicas on a Lease: status
// and watch report the leader and its token; the leader stopped by SIGTERM
// releases the Lease, and the other replica's command starts well within
// the TTL, with a higher token.
func TestKubeRunStatusWatch(t *testing.T) {
	const ttl = 2 * time.Second
	h := newHub(t)
	url, elec := kubeURL(t), election(t)
	w := startElectPipe(t, "watch", nil, "watch", "--json", "--backend="+url, "--election="+elec)
	if got := w.nextLine(20 * time.Second); !strings.Contains(got, `"leader":false`) {
		t.Fatalf("watch's first line: got %q, want no leader", got)
	}
	run := func(id string) *proc {
		return startElect(t, id, []string{h.childEnv()}, "run", "--ttl="+ttl.String(),
			"--backend="+url, "--election="+elec, "--identity="+id, "--", cmdBin)
	}
	first := run("replica-a")
	hello := h.next(20*time.Second, "replica-a's command to start")
	if !hello.hello || hello.identity != "replica-a" {
		t.Fatalf("got %v, want replica-a's hello", hello)
	}
	second := run("replica-b")

	var j holderJSON
	if err := json.Unmarshal([]byte(w.nextLine(10*time.Second)), &j); err != nil || !j.Leader || j.Identity != "replica-a" || j.Token != hello.token {
		t.Errorf("watch: got %+v (%v), want replica-a with token %d", j, err, hello.token)
	}
	code, out := runElect(t, nil, "status", "--backend="+url, "--election="+elec)
	if want := fmt.Sprintf("leader of %q: replica-a (token %d", elec, hello.token); code != 0 || !strings.Contains(out, want) {
		t.Errorf("status: got %d %q, want 0 and %q", code, out, want)
	}
	code, out = runElect(t, nil, "status", "--json", "--backend="+url, "--election="+elec)
	if err := json.Unmarshal([]byte(out), &j); code != 0 || err != nil || j.Identity != "replica-a" || j.Token != hello.token || j.TTLSeconds == nil {
		t.Errorf("status --json: got %d %q (%v), want 0, replica-a, token %d and the time left", code, out, err, hello.token)
	}

	stopped := time.Now()
	first.signal(syscall.SIGTERM)
	if bye := h.next(10*time.Second, "replica-a's command to die"); bye.hello || bye.identity != "replica-a" {
		t.Fatalf("got %v, want the bye of replica-a's command", bye)
	}
	next := h.next(10*time.Second, "replica-b's command to start")
	if !next.hello || next.identity != "replica-b" || next.token <= hello.token {
		t.Fatalf("got %v, want replica-b's hello with a token above %d", next, hello.token)
	}
	if took := next.elected.Sub(stopped); took >= ttl {
		t.Errorf("replica-b was elected %v after replica-a was stopped; want before the TTL %v (the Lease was released)", took.Round(time.Millisecond), ttl)
	}
	t.Logf("SIGTERM: replica-b elected %v and its command started %v after replica-a was stopped",
		next.elected.Sub(stopped).Round(time.Millisecond), next.at.Sub(stopped).Round(time.Millisecond))
	if code := first.wait(10 * time.Second); code != 0 {
		t.Errorf("replica-a stopped by SIGTERM: exit %d, want 0", code)
	}
	for {
		line := w.nextLine(10 * time.Second)
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatalf("watch: %q: %v", line, err)
		}
		if j.Leader && j.Identity == "replica-b" {
			if j.Token != next.token {
				t.Errorf("watch: got %+v, want replica-b with token %d", j, next.token)
			}
			break
		}
		if j.Leader {
			t.Fatalf("watch: got %+v, want replica-b (or no leader) after replica-a", j)
		}
	}

	second.signal(syscall.SIGTERM)
	if code := second.wait(10 * time.Second); code != 0 {
		t.Errorf("replica-b stopped by SIGTERM: exit %d, want 0", code)
	}
	if got := w.nextLine(10 * time.Second); !strings.Contains(got, `"leader":false`) {
		t.Errorf("watch after the last leader stopped: got %q, want no leader", got)
	}
	code, out = runElect(t, nil, "status", "--backend="+url, "--election="+elec)
	if code != exitNoLeader || !strings.Contains(out, "no leader") {
		t.Errorf("status after both stopped: got %d %q, want %d and no leader", code, out, exitNoLeader)
	}
	w.signal(syscall.SIGINT)
	if code := w.wait(10 * time.Second); code != 0 {
		t.Errorf("watch stopped by SIGINT: exit %d, want 0", code)
	}
}

// TestKubePartitions: elect partitions reads a group whose members run on
// Leases (package partition over the kube driver), and prints every
// partition owned, each by the member placed on it.
func TestKubePartitions(t *testing.T) {
	url, group := kubeURL(t), election(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	q := newQuotas(2, 2)
	for _, id := range []string{"w1", "w2"} {
		b, closer, err := backendurl.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = closer.Close() })
		a, err := partition.New(b, group, 4, q.options(id, 2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = a.Run(ctx) })
	}
	args := []string{"partitions", "--backend=" + url, "--group=" + group, "--partitions=4", "--json"}
	tab := q.settled(t, ctx, 30*time.Second, args)
	if len(tab.Partitions) != 4 || tab.Members[0].Owned+tab.Members[1].Owned != 4 || tab.Members[0].Owned == 0 || tab.Members[1].Owned == 0 {
		t.Errorf("table %+v; want 2 members sharing 4 partitions", tab)
	}
	for _, o := range tab.Partitions {
		if o.Token == 0 {
			t.Errorf("partition %+v; want a token", o)
		}
	}
}

// TestKubeCompare runs elect compare --short on the test apiserver: the
// Lease backend is measured under every workload, with its token source
// and safety line, and leaves no election held.
func TestKubeCompare(t *testing.T) {
	t.Parallel()
	var stdout testenv.Buffer
	p := startElectOut(t, "compare", nil, &stdout, "compare", "--short", "--failover-trials=1", "--rebalance-trials=1", "--renew-rounds=1", "--json", "--backend="+kubeURL(t))
	if code := p.wait(5 * time.Minute); code != 0 {
		t.Fatalf("elect compare: exit %d; want 0\n%s", code, p.out.String())
	}
	var rep compareJSON
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout.String())
	}
	if len(rep.Backends) != 1 || rep.Interrupted {
		t.Fatalf("report: %d backends, interrupted %v; want 1, false", len(rep.Backends), rep.Interrupted)
	}
	b := rep.Backends[0]
	if b.Name != "kube" || !strings.Contains(b.Token, "leaseTransitions") || b.Safety == "" || len(b.Leftover) != 0 {
		t.Errorf("backend: name %q, token %q, safety %q, left behind %q; want kube, leaseTransitions, a safety line, nothing", b.Name, b.Token, b.Safety, b.Leftover)
	}
	if len(b.Results) != len(workloadNames) {
		t.Fatalf("%d results; want %d", len(b.Results), len(workloadNames))
	}
	for j, r := range b.Results {
		if r.Workload != workloadNames[j] || r.Samples == 0 || r.Errors != 0 || r.Skipped != "" {
			t.Errorf("result %d: %s, %d samples, %d errors (%s), skipped %q; want %s measured without error", j, r.Workload, r.Samples, r.Errors, r.First, r.Skipped, workloadNames[j])
		}
		if r.Workload == "failover" && r.Samples > 0 && r.All[0] < rep.TTLMS {
			t.Errorf("failover: fastest %vms; want at least the TTL %vms", r.All[0], rep.TTLMS)
		}
	}
}
