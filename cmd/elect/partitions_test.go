//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/partition"
)

var partStore = sync.OnceValue(func() *memory.Backend {
	s := memory.New()
	backendurl.Register("partmem", s.Opener())
	return s
})

// TestPartitions: elect partitions prints each member's load and each
// partition's owner, token and placed member, as text or JSON, and exits 1

// quotas counts the partitions each in-process member holds, from its
// OnAssigned and OnRevoked, and closes full once every one of members holds
// want: the group has settled, so elect partitions can be read once.
type quotas struct {
	members, want int
	full          chan struct{}
	mu            sync.Mutex
	held          map[string]int
	closed        bool
}

func newQuotas(members, want int) *quotas {
	return &quotas{members: members, want: want, full: make(chan struct{}), held: map[string]int{}}
}

// options returns member id's Options, its callbacks counting for q.
func (q *quotas) options(id string, ttl time.Duration) *partition.Options {
	return &partition.Options{
		Identity: id, TTL: ttl, Logger: slog.New(slog.DiscardHandler),
		OnAssigned: func(context.Context, partition.Assignment) { q.add(id, 1) },
		OnRevoked:  func(partition.Assignment, error) { q.add(id, -1) },
	}
}

func (q *quotas) add(id string, d int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held[id] += d
	if q.closed || len(q.held) < q.members {
		return
	}
	for _, n := range q.held {
		if n != q.want {
			return
		}
	}
	q.closed = true
	close(q.full)
}

// settled runs elect partitions --json (args) once q is full, and returns
// its table; it fails t unless the table shows the group settled.
func (q *quotas) settled(t *testing.T, ctx context.Context, wait time.Duration, args []string) partition.Table {
	t.Helper()
	select {
	case <-q.full:
	case <-time.After(wait):
		q.mu.Lock()
		defer q.mu.Unlock()
		t.Fatalf("members did not hold %d partitions each within %v: %v", q.want, wait, q.held)
	}
	var stdout, stderr bytes.Buffer
	if code := elect(ctx, args, &stdout, &stderr); code != exitOK {
		t.Fatalf("elect partitions: exit %d, stderr %q; want 0", code, stderr.String())
	}
	var tab partition.Table
	if err := json.Unmarshal(stdout.Bytes(), &tab); err != nil {
		t.Fatalf("--json output %q: %v", stdout.String(), err)
	}
	if len(tab.Members) != 2 || !settledTable(&tab) {
		t.Fatalf("table not settled: %s", stdout.String())
	}
	return tab
}

// while some partition has no owner.
func TestPartitions(t *testing.T) {
	store := partStore()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	q := newQuotas(2, 3)
	for _, id := range []string{"w1", "w2"} {
		// A TTL whose leases a loaded machine's stalls do not cost: the
		// table is read once the group has settled, and must show it so.
		a, err := partition.New(store.Peer(), "cli", 6, q.options(id, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = a.Run(ctx) })
	}
	var stdout, stderr bytes.Buffer
	args := []string{"partitions", "--backend=partmem://", "--group=cli", "--partitions=6", "--json"}
	tab := q.settled(t, ctx, 10*time.Second, args)
	if len(tab.Members) != 2 || len(tab.Partitions) != 6 || tab.Members[0].Owned+tab.Members[1].Owned != 6 {
		t.Errorf("table %+v; want 2 members owning 6 partitions between them", tab)
	}
	for _, o := range tab.Partitions {
		if o.Owner == "" || o.Token == 0 || o.Owner != o.Placed {
			t.Errorf("partition %+v; want an owner (as placed) and a token", o)
		}
	}

	stdout.Reset()
	if code := elect(ctx, args[:4], &stdout, &stderr); code != exitOK {
		t.Fatalf("text: exit %d, stderr %q", code, stderr.String())
	}
	for _, want := range []string{`group "cli": 2 members, 6 partitions, 0 unowned`, "partition  owner  token  placed", fmt.Sprintf("%d  ", tab.Partitions[5].Partition)} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, stdout.String())
		}
	}

	stdout.Reset()
	if code := elect(ctx, []string{"partitions", "--backend=partmem://", "--group=nobody", "--partitions=3"}, &stdout, &stderr); code != exitNoLeader {
		t.Errorf("group without members: exit %d; want %d (unowned partitions)", code, exitNoLeader)
	}
	if code := elect(ctx, []string{"partitions", "--backend=partmem://", "--group=cli"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("without --partitions: exit %d; want %d", code, exitUsage)
	}
}

func settledTable(t *partition.Table) bool {
	for _, o := range t.Partitions {
		if o.Owner == "" || o.Owner != o.Placed {
			return false
		}
	}
	return true
}

// TestPartitionsWeight: elect partitions shows each member's weight, as
// text and as JSON.
func TestPartitionsWeight(t *testing.T) {
	tab := &partition.Table{
		Group: "w",
		Members: []partition.MemberLoad{
			{Identity: "small", Slot: 0, Weight: 1, Owned: 1, Placed: 1},
			{Identity: "large", Slot: 1, Weight: 3, Owned: 3, Placed: 3},
		},
	}
	for p := range 4 {
		id := "large"
		if p == 0 {
			id = "small"
		}
		tab.Partitions = append(tab.Partitions, partition.Owner{Partition: p, Owner: id, Token: uint64(p + 1), Placed: id})
	}
	var out bytes.Buffer
	if unowned := printTable(&out, tab, false); unowned != 0 {
		t.Errorf("printTable: %d unowned; want 0", unowned)
	}
	for _, want := range []string{"member  slot  weight  owned  placed", "large     1       3      3       3", "partition  owner  token  placed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	printTable(&out, tab, true)
	var back partition.Table
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("--json output %q: %v", out.String(), err)
	}
	if len(back.Members) != 2 || back.Members[1].Weight != 3 || !strings.Contains(out.String(), `"weight":3`) {
		t.Errorf("--json output %s; want each member's weight", out.String())
	}
}

// TestPartitionsUsage: bad flags exit 2 with a message naming the flag and
// the limit, before the backend is read.
func TestPartitionsUsage(t *testing.T) {
	partStore()
	for _, tc := range []struct{ args, want string }{
		{"--group=g --partitions=65537", "--partitions 65537: want at most 65536"},
		{"--group=/a --partitions=4", `--group "/a"`},
		{"--group=" + strings.Repeat("a", 300) + " --partitions=4", "--group is 300 bytes; want at most 249"},
		{"--group=g --partitions=4 --timeout=0s", "--timeout 0s: want a positive duration"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"partitions", "--backend=partmem://"}, strings.Fields(tc.args)...)
		if code := elect(context.Background(), args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("elect partitions %s: exit %d, stderr %q; want %d saying %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}

// TestPartitionsWrongCount: with --partitions lower than the members' own
// count, elect partitions warns that partition N has a holder; with a
// higher one, that the last partitions have no owner while the others do;
// with two members of one identity, that they share it. A group without
// members prints "members": [] in JSON.
func TestPartitionsWrongCount(t *testing.T) {
	store := partStore()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	q := newQuotas(1, 6)
	// A TTL whose leases a loaded machine's stalls do not cost: the reads
	// below expect the partitions held throughout.
	a, err := partition.New(store.Peer(), "count", 6, q.options("w1", 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = a.Run(ctx) })
	run := func(n int) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := elect(ctx, []string{"partitions", "--backend=partmem://", "--group=count", fmt.Sprintf("--partitions=%d", n)}, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	select {
	case <-q.full:
	case <-time.After(10 * time.Second):
		t.Fatal("the member does not own the 6 partitions within 10s")
	}
	if code, _, stderr := run(6); code != exitOK || stderr != "" {
		t.Errorf("--partitions 6 (right): exit %d, stderr %q; want 0 and no warning", code, stderr)
	}
	if _, _, stderr := run(4); !strings.Contains(stderr, `warning: partition 4 of group "count" has a holder (w1`) {
		t.Errorf("--partitions 4 (too few): stderr %q; want a warning that partition 4 has a holder", stderr)
	}
	if code, _, stderr := run(8); code != exitNoLeader || !strings.Contains(stderr, "the group may have 6 partitions, not --partitions 8") {
		t.Errorf("--partitions 8 (too many): exit %d, stderr %q; want 1 and a warning that the group may have 6", code, stderr)
	}
	joined := make(chan struct{})
	twin, err := partition.New(store.Peer(), "count", 6, &partition.Options{Identity: "w1", TTL: 5 * time.Second,
		Logger: slog.New(onMessage{"joined", sync.OnceFunc(func() { close(joined) })})})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = twin.Run(ctx) })
	select {
	case <-joined:
	case <-time.After(10 * time.Second):
		t.Fatal("the second member named w1 did not join within 10s")
	}
	if _, _, stderr := run(6); !strings.Contains(stderr, `share the identity "w1"`) {
		t.Errorf("two members named w1, both joined: stderr %q; want a warning that they share the identity", stderr)
	}
	var stdout, stderr bytes.Buffer
	elect(ctx, []string{"partitions", "--backend=partmem://", "--group=empty", "--partitions=2", "--json"}, &stdout, &stderr)
	if !strings.Contains(stdout.String(), `"members":[]`) {
		t.Errorf("--json of a group without members: %s; want \"members\":[]", stdout.String())
	}
}

// TestPartitionsNoAnswerCause: when the backend does not answer within
// --timeout, elect partitions says why as far as a connection to each
// server tells: a server that accepts connections and never answers, a
// TLS server whose certificate authority the URL does not name; without
// numbers the user never set.
func TestPartitionsNoAnswerCause(t *testing.T) {
	t.Parallel() // listeners of its own; the TLS node is only dialled
	endpoint, _, _, _ := testenv.EtcdTLS(t)
	silent := testenv.SilentListener(t)
	for _, tc := range []struct{ url, want string }{
		{"zk://" + silent, silent + ": accepts connections"},
		{"etcd://" + silent, silent + ": accepts connections"},
		{"etcds://" + endpoint, "certificate signed by unknown authority (give the CA's certificate file as query parameter ca=FILE)"},
		{"etcds://user:s3cret@" + endpoint, "certificate signed by unknown authority (give the CA's certificate file as query parameter ca=FILE)"},
	} {
		code, out := runElect(t, nil, "partitions", "--backend="+tc.url, "--group=g", "--partitions=2", "--timeout=2s")
		if code != exitBackend || !strings.Contains(out, tc.want) {
			t.Errorf("elect partitions --backend=%s: exit %d, output\n%s\nwant %d and %q", tc.url, code, out, exitBackend, tc.want)
		}
		if strings.Contains(out, "s3cret") || strings.Contains(out, "(dial_timeout)") {
			t.Errorf("elect partitions --backend=%s: output shows the password or an unset dial_timeout:\n%s", tc.url, out)
		}
	}
}

// onMessage is a slog.Handler that calls f for each record whose message
// is msg, and drops every record.
type onMessage struct {
	msg string
	f   func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }

func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.f()
	}
	return nil
}

func (h onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onMessage) WithGroup(string) slog.Handler      { return h }
