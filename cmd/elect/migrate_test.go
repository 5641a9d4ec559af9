//go:build unix

package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/migrate"
)

// phaseURL is the migrate URL of phase over old and new, as `elect
// migrate url` prints it.
func phaseURL(phase, old, new string) string {
	q := "new=" + url.QueryEscape(new)
	if old != "" {
		q = "old=" + url.QueryEscape(old) + "&" + q
	}
	return migrate.SchemePrefix + phase + "://?" + q
}

// TestMigrateURLChecks: `elect migrate url` accepts a phase in any case,
// and refuses (exit 2) an inner URL that is not one, one store as old and
// new, and a migrate URL nested in another, before printing anything.
func TestMigrateURLChecks(t *testing.T) {
	const redis, etcd = "redis://127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003", "etcd://127.0.0.1:2379"
	code, out := runElect(t, nil, "migrate", "url", "--phase", "Both", "--old", redis, "--new", etcd)
	if code != 0 || strings.TrimSpace(out) != phaseURL("both", redis, etcd) {
		t.Errorf("--phase Both: got exit %d and %q; want 0 and %s", code, out, phaseURL("both", redis, etcd))
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"old not a URL", "bogus", etcd, "old: not a backend URL"},
		{"new with a bad port", redis, "etcd://127.0.0.1:99999", "new: host"},
		{"unknown scheme", "consul://h", etcd, `old: scheme "consul" is not registered`},
		{"one store twice", redis, "redis://127.0.0.1:7003", "old and new name the same store"},
		{"nested", phaseURL("both", redis, etcd), "zk://127.0.0.1:2181", "nested"},
		{"a password never shows", "redis://admin:k9?s3cret@h:7706", etcd, "'@' after the host"},
	} {
		code, out := runElect(t, nil, "migrate", "url", "--phase", "new", "--old", tc.old, "--new", tc.new)
		if code != exitUsage || !strings.Contains(out, tc.want) || strings.Contains(out, "migrate+new://") {
			t.Errorf("%s: got exit %d and\n%s\nwant exit %d, no URL, and %q", tc.name, code, out, exitUsage, tc.want)
		}
		if strings.Contains(out, "s3cret") || strings.Contains(out, "k9") {
			t.Errorf("%s: output shows the password:\n%s", tc.name, out)
		}
	}
	// The same refusal when a replica opens such a URL by hand.
	code, out = runElect(t, nil, "status", "--election=e", "--backend="+phaseURL("both", redis, "redis://127.0.0.1:7002"))
	if code != exitUsage || !strings.Contains(out, "same store") {
		t.Errorf("status on one store twice: got exit %d and\n%s\nwant exit %d naming the same store", code, out, exitUsage)
	}
}

// slowRedis is the test Redis URL with a node timeout for a loaded
// machine: elect status reads the nodes with the URL's timeout, and the
// default 100 ms is short when every test of the repository shares two
// cores.
func slowRedis(t *testing.T) string { return backendURL(t, "redis", nil) + "&request_timeout=500ms" }

// openBackend opens raw with the drivers elect registers, closed with t.
func openBackend(t *testing.T, raw string) backend.Backend {
	t.Helper()
	b, c, err := backendurl.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return b
}

// TestMigrateCleanupRefusesUnmigrated: `elect migrate cleanup` on an election
// that was never migrated, while it has a live leader on Redis, exits 2
// naming runbook step 3 and changes nothing: the leader keeps its lease and
// the next leader's token is above it. With no holder and no marker it
// exits 2 saying there is nothing to remove.
func TestMigrateCleanupRefusesUnmigrated(t *testing.T) {
	redis, etcd := slowRedis(t), backendURL(t, "etcd", nil)
	elec := election(t)
	rb := openBackend(t, redis)
	ctx := t.Context()
	c := backend.Candidate{Election: elec, Identity: "live", TTL: 5 * time.Second}
	for range 3 {
		l, err := rb.Campaign(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
	}
	live, err := rb.Campaign(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	done := phaseURL("done", redis, etcd)
	code, out := runElect(t, nil, "migrate", "cleanup", "--backend="+done, "--election="+elec)
	if code != exitUsage || !strings.Contains(out, "step 3") || !strings.Contains(out, `"live"`) || strings.Contains(out, "removed the") {
		t.Errorf("cleanup with a live leader and no marker: got exit %d and\n%s\nwant exit %d naming step 3 and the holder, nothing removed", code, out, exitUsage)
	}
	if err := live.Renew(ctx); err != nil {
		t.Errorf("the live leader's Renew after cleanup: %v", err)
	}
	_ = live.Release(ctx)
	next, err := rb.Campaign(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if next.Token() <= live.Token() {
		t.Errorf("token after cleanup: got %d after %d; want it above: cleanup never lowers a counter", next.Token(), live.Token())
	}
	_ = next.Release(ctx)

	code, out = runElect(t, nil, "migrate", "cleanup", "--backend="+done, "--election="+elec)
	if code != exitUsage || !strings.Contains(out, "nothing to remove") || strings.Contains(out, "removed the") {
		t.Errorf("cleanup with no holder and no marker: got exit %d and\n%s\nwant exit %d saying there is nothing to remove", code, out, exitUsage)
	}
}

// TestMigrateStatusShowsTTLFloor: the status of a migration onto ZooKeeper
// states the shortest TTL the ensemble's configuration allows, as the
// status of the ZooKeeper URL alone does: the migrate Backend forwards the
// new store's floor.
func TestMigrateStatusShowsTTLFloor(t *testing.T) {
	u := phaseURL("both", slowRedis(t), backendURL(t, "zk", nil))
	code, out := runElect(t, nil, "status", "--election="+election(t), "--backend="+u)
	if code != exitNoLeader || !regexp.MustCompile(`store: new store: syncLimit \d+ × tickTime .*: leases need a TTL of at least \d`).MatchString(out) {
		t.Errorf("status of a migration onto zk: got exit %d and\n%s\nwant exit %d and the new store's TTL floor", code, out, exitNoLeader)
	}
}

// TestMigrateStatusUnreachable: a migrate status with the old store
// unreachable exits 3, as the help says for a backend that cannot be
// reached, and names the store.
func TestMigrateStatusUnreachable(t *testing.T) {
	u := phaseURL("both", "redis://127.0.0.1:1?request_timeout=200ms", backendURL(t, "etcd", nil))
	code, out := runElect(t, nil, "status", "--timeout=5s", "--backend="+u, "--election="+election(t))
	if code != exitBackend || !strings.Contains(out, "old store") {
		t.Errorf("status with the old store unreachable: got exit %d and\n%s\nwant exit %d naming the old store", code, out, exitBackend)
	}
}

// runbook drives `elect run` replicas through the migration runbook and
// checks what their commands (hub children) report: one at a time, tokens
// strictly rising.
type runbook struct {
	t        *testing.T
	h        *hub
	elec     string
	replicas []*proc
	ids      []string

	mu      sync.Mutex
	alive   map[string]bool // identities whose command runs
	changed chan struct{}   // closed and replaced when a command ends
	last    hubEvent        // the last hello
	hellos  chan hubEvent
}

// collect reads the hub's events until the test ends.
func (r *runbook) collect(stop <-chan struct{}) {
	var token uint64
	for {
		select {
		case <-stop:
			return
		case e := <-r.h.events:
			r.mu.Lock()
			switch e.kind {
			case "hello":
				if len(r.alive) > 0 {
					r.t.Errorf("%s's command started while %v's runs: two leaders", e.identity, r.alive)
				}
				if e.token <= token {
					r.t.Errorf("%s's command got token %#x after %#x: tokens must strictly rise", e.identity, e.token, token)
				}
				token = e.token
				r.alive[e.identity] = true
				r.last = e
				r.hellos <- e
			case "bye":
				delete(r.alive, e.identity)
				close(r.changed)
				r.changed = make(chan struct{})
			}
			r.mu.Unlock()
		}
	}
}

// start starts replica i on url, with a TTL that a loaded machine does not
// cost a term of: a stalled leader whose lease lapsed would still run its
// command when the next one starts.
func (r *runbook) start(i int, phase, url string) {
	r.ids[i] = fmt.Sprintf("r%d-%s", i, phase)
	r.replicas[i] = startElect(r.t, r.ids[i], []string{r.h.childEnv()}, "run", "--ttl=10s", "--grace=5s",
		"--backend="+url, "--election="+r.elec, "--identity="+r.ids[i], "--", cmdBin)
}

// leader waits for the next hello unless a command runs, and returns the
// last hello.
func (r *runbook) leader(what string) hubEvent {
	r.t.Helper()
	r.mu.Lock()
	running := len(r.alive) > 0
	last := r.last
	r.mu.Unlock()
	if running {
		return last
	}
	select {
	case e := <-r.hellos:
		return e
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no leader's command started within 30s: %s", what)
		return hubEvent{}
	}
}

// drain forgets hellos already read through leader's fast path.
func (r *runbook) drain() {
	for {
		select {
		case <-r.hellos:
		default:
			return
		}
	}
}

// restart stops replica i (exit 0 expected) and starts it on url, then
// waits until a command runs again.
func (r *runbook) restart(i int, phase, url string) {
	r.t.Helper()
	r.mu.Lock()
	leading := r.alive[r.ids[i]]
	r.mu.Unlock()
	r.replicas[i].signal(syscall.SIGTERM)
	if code := r.replicas[i].wait(20 * time.Second); code != 0 {
		r.t.Fatalf("%s stopped by SIGTERM: exit %d, want 0:\n%s", r.ids[i], code, r.replicas[i].out.String())
	}
	if leading {
		r.waitBye(r.ids[i])
	}
	r.drain()
	r.start(i, phase, url)
	r.leader("after restarting " + r.ids[i])
}

// waitBye waits until id's command is gone.
func (r *runbook) waitBye(id string) {
	r.t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		gone, changed := !r.alive[id], r.changed
		r.mu.Unlock()
		if gone {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			r.t.Fatalf("%s's command still runs 10s after its elect exited", id)
		}
	}
}

var leaderLine = regexp.MustCompile(`(?m)^leader of "[^"]+": (\S+) \(token (\d+)\)$`)

// status runs elect status on url and checks that it exits 0 and names
// want's identity and token, and that its output contains each of more.
func (r *runbook) status(url string, want hubEvent, more ...string) string {
	r.t.Helper()
	code, out := runElect(r.t, nil, "status", "--backend="+url, "--election="+r.elec)
	for try := 1; code == exitBackend && try < 5; try++ {
		// A store that does not answer within the node timeout is what
		// exit 3 reports; on a loaded machine that is no finding: ask again.
		r.t.Logf("status try %d: exit 3 (a store did not answer), asking again:\n%s", try, out)
		code, out = runElect(r.t, nil, "status", "--backend="+url, "--election="+r.elec)
	}
	m := leaderLine.FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != want.identity || m[2] != strconv.FormatUint(want.token, 10) {
		r.t.Errorf("status with %s: got exit %d and\n%s\nwant exit 0 and leader %s (token %d)", url[:strings.Index(url, "?")], code, out, want.identity, want.token)
	}
	for _, s := range more {
		if !strings.Contains(out, s) {
			r.t.Errorf("status with %s: got\n%s\nwant it to say %q", url[:strings.Index(url, "?")], out, s)
		}
	}
	return out
}

// TestMigrationRunbook runs the runbook of docs/migration.md with `elect
// run` replicas, Redis to etcd, to ZooKeeper and to Kubernetes Leases:
// three replicas on
// Redis alone, each restarted into phase
// both, new and done, `elect status` after each restart, cleanup, then
// every replica restarted again with the phase-done URL that still names
// Redis. At every point one command runs at a time, tokens rise, status
// names the leader (exit 0), and no replica exits on its own.
func TestMigrationRunbook(t *testing.T) {
	t.Parallel()
	for _, to := range []string{"etcd", "zk", "kube"} {
		t.Run(to, func(t *testing.T) {
			t.Parallel() // an election and a hub of its own; no fault is injected
			runRunbook(t, to)
		})
	}
}

// runRunbook is TestMigrationRunbook from Redis to the backend named to.
func runRunbook(t *testing.T, to string) {
	redis, nw := slowRedis(t), backendURL(t, to, nil)
	marker := migrate.MarkerPrefix + to
	r := &runbook{t: t, h: newHub(t), elec: election(t), replicas: make([]*proc, 3), ids: make([]string, 3),
		alive: map[string]bool{}, changed: make(chan struct{}), hellos: make(chan hubEvent, 100)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { r.collect(stop) })
	defer wg.Wait()
	defer close(stop)

	urls := map[string]string{"redis": redis}
	for _, p := range []string{"old", "both", "new", "done"} {
		code, out := runElect(t, nil, "migrate", "url", "--phase", p, "--old", redis, "--new", nw)
		if code != 0 {
			t.Fatalf("migrate url --phase %s: exit %d:\n%s", p, code, out)
		}
		urls[p] = strings.TrimSpace(out)
	}

	for i := range r.replicas {
		r.start(i, "redis", redis)
	}
	l := r.leader("step 1")
	r.status(urls["old"], l, "marker absent")

	for i := range r.replicas { // step 2
		r.restart(i, "both", urls["both"])
		r.status(urls["both"], r.leader("step 2"), "marker absent")
	}
	for i := range r.replicas { // step 3
		r.restart(i, "new", urls["new"])
		r.status(urls["new"], r.leader("step 3"))
	}
	l = r.leader("step 3 done")
	if e, _ := migrate.SplitToken(l.token); e != 1 {
		t.Fatalf("after step 3 the leader %s has token %#x; want epoch 1 (%s)", l.identity, l.token, to)
	}
	r.status(urls["new"], l, "marker written", marker)
	for i := range r.replicas { // step 4
		r.restart(i, "done", urls["done"])
		r.status(urls["done"], r.leader("step 4"), "marker written")
	}

	code, out := runElect(t, nil, "migrate", "cleanup", "--backend="+urls["done"], "--election="+r.elec)
	if code != 0 || !strings.Contains(out, `removed the migrated marker "`+marker+`"`) {
		t.Fatalf("cleanup: got exit %d and\n%s\nwant exit 0 naming the marker removed", code, out)
	}
	r.status(urls["done"], r.leader("after cleanup"), "marker absent (removed by cleanup")
	for i := range r.replicas { // restarts after cleanup, same URL
		r.restart(i, "done", urls["done"])
		r.status(urls["done"], r.leader("restart after cleanup"))
	}
	for i, p := range r.replicas {
		select {
		case <-p.done:
			t.Errorf("%s exited on its own (%d) after restarting past cleanup:\n%s", r.ids[i], p.status, p.out.String())
		default:
		}
	}
	code, out = runElect(t, nil, "migrate", "cleanup", "--backend="+urls["done"], "--election="+r.elec)
	if code != exitUsage || !strings.Contains(out, "nothing to remove") {
		t.Errorf("second cleanup: got exit %d and\n%s\nwant exit %d saying there is nothing to remove", code, out, exitUsage)
	}
	for i, p := range r.replicas {
		p.signal(syscall.SIGTERM)
		if code := p.wait(20 * time.Second); code != 0 {
			t.Errorf("%s stopped by SIGTERM: exit %d, want 0", r.ids[i], code)
		}
	}
}
