package integration_test

// Fault tests of the ZooKeeper driver on the three-server test ensemble:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -race -run 'ZooKeeper' -v .

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/internal/testenv"
)

// Killing the ZooKeeper leader server: every server drops its clients while
// the ensemble elects a new leader, so under the default policy the elector
// leader steps down; its session survives, and the election has a leader
// again once the ensemble is back, with no overlap. Not t.Parallel: it
// kills a shared server.
func TestZooKeeperKillLeaderServer(t *testing.T) {
	servers := testenv.ZKServers(t)
	tl := newTermLog(zkTTL, testLogger)
	name := zkName("kill-leader")
	alice := tl.elector(t, zkBackend(t, servers, nil), name, "alice")
	runElector(t, alice)
	first := waitTerm(t, tl.elected, 20*time.Second, "alice's election")
	bob := tl.elector(t, zkBackend(t, servers, nil), name, "bob")
	runElector(t, bob)
	admin := zkConn(t, servers, nil)
	waitZKCandidates(t, admin, zkPrefix+"/"+name, 2)

	n := zkLeaderServer(t, servers)
	killed := time.Now()
	testenv.Fault(t, "kill", "zk", strconv.Itoa(n))
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			testenv.Fault(t, "restart", "zk", strconv.Itoa(n))
		}
	}
	t.Cleanup(restart)

	down := waitTerm(t, tl.ended, 3*zkTTL, "step-down when the ensemble drops its clients")
	next := waitTerm(t, tl.elected, 15*time.Second, "a leader after the ZooKeeper leader died")
	t.Logf("ZooKeeper leader (server %d) killed at 0; %s stepped down at %v; %s (token %d) elected at %v",
		n, down.who, down.end.Sub(killed), next.who, next.token, next.start.Sub(killed))
	if down.token != first.token {
		t.Fatalf("stepped-down term: got token %d, want alice's %d", down.token, first.token)
	}
	restart()
	// The election keeps working after the server comes back: a Resign hands
	// it to the other candidate. Under load the term elected above can end
	// (a renewal past its deadline while the ensemble settles) and either
	// candidate win the next, so the test resigns whichever leads and counts
	// only the elections that follow the Resign.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var resigned *elector.Elector
	var asked time.Time // before the Resign that succeeded
	for resigned == nil {
		for _, e := range []*elector.Elector{alice, bob} {
			if !e.IsLeader() {
				continue
			}
			asked = time.Now()
			err := e.Resign(ctx)
			if err == nil {
				resigned = e
				break
			}
			if !errors.Is(err, elector.ErrNotLeader) { // not: its term ended meanwhile
				t.Fatalf("Resign after the fault: %v", err)
			}
		}
		if resigned == nil {
			waitTerm(t, tl.elected, 20*time.Second, "a leader to resign")
		}
	}
	other := alice
	if resigned == alice {
		other = bob
	}
	for {
		third := waitTerm(t, tl.elected, 20*time.Second, "hand-over after the fault")
		if third.start.Before(asked) {
			continue // elected before the Resign
		}
		if third.who != other.Identity() {
			t.Errorf("after %s resigned: %s elected, want %s", resigned.Identity(), third.who, other.Identity())
		}
		break
	}
	tl.checkNoOverlap(t)
}

// A leader cut off from ZooKeeper by a network partition (toxiproxy timeout
// toxic: bytes are dropped, the connection stays open, the session lives on
// at the servers) steps down before its session can expire there, and its
// successor's token is greater. The proxy is the test's own, in front of
// alice's connection only, so it runs in parallel.
func TestZooKeeperPartitionedLeaderStepsDown(t *testing.T) {
	t.Parallel()
	servers := testenv.ZKServers(t)
	proxy := startToxiproxy(t, "zookeeper", servers[0])
	// The widest safety margin (under TTL/2): the step-down comes 5.5 s
	// before the session can expire at the servers, longer than a loaded
	// machine delays the one or the other.
	const ttl = 12 * time.Second
	tl := newTermLog(ttl, testLogger)
	tl.margin = 5500 * time.Millisecond
	name := zkName("partition")
	alice := tl.elector(t, zkBackend(t, []string{proxy.Listen}, nil), name, "alice")
	runElector(t, alice)
	first := waitTerm(t, tl.elected, 20*time.Second, "alice's election")
	bob := tl.elector(t, zkBackend(t, servers[1:], nil), name, "bob")
	runElector(t, bob)
	admin := zkConn(t, servers[1:], nil)
	dir := zkPrefix + "/" + name
	waitZKCandidates(t, admin, dir, 2)
	kids, _, err := admin.Children(dir)
	if err != nil {
		t.Fatal(err)
	}
	gone := make(chan time.Time, 1)
	for _, k := range kids {
		data, _, ch, err := admin.GetW(dir + "/" + k)
		if err == nil && string(data) == "alice" {
			go func() { <-ch; gone <- time.Now() }()
		}
	}

	cut := time.Now()
	heal := cutLinks(t, proxy)

	down := waitTerm(t, tl.ended, 2*ttl, "step-down of the cut-off leader")
	next := waitTerm(t, tl.elected, 3*ttl, "successor's election")
	expired := <-gone
	heal()
	if down.who != first.who || next.who != "bob" {
		t.Fatalf("got %s stepping down and %s elected, want alice then bob", down.who, next.who)
	}
	t.Logf("cut at 0; alice stepped down at %v; the servers expired her session at %v; bob elected at %v (session timeout %v)",
		down.end.Sub(cut), expired.Sub(cut), next.start.Sub(cut), ttl)
	if !down.end.Before(expired) {
		t.Errorf("alice stepped down %v after her session expired; want before", down.end.Sub(expired))
	}
	if !down.end.Before(next.start) {
		t.Errorf("successor elected %v before the cut-off leader stepped down; want after", down.end.Sub(next.start))
	}
	if next.token <= first.token {
		t.Errorf("successor token: got %d, want > %d", next.token, first.token)
	}
	tl.checkNoOverlap(t)
}
