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
	"github.com/leaderkit/elector/partition"
)

var partStore = sync.OnceValue(func() *memory.Backend {
	s := memory.New()
	backendurl.Register("partmem", s.Opener())
	return s
})

// TestPartitions: elect partitions prints each member's load and each
// partition's owner, token and placed member, as text or JSON, and exits 1
// while some partition has no owner.
func TestPartitions(t *testing.T) {
	store := partStore()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, id := range []string{"w1", "w2"} {
		a, err := partition.New(store.Peer(), "cli", 6, &partition.Options{Identity: id, TTL: time.Second, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = a.Run(ctx) })
	}
	var (
		stdout, stderr bytes.Buffer
		tab            partition.Table
	)
	args := []string{"partitions", "--backend=partmem://", "--group=cli", "--partitions=6", "--json"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		stdout.Reset()
		stderr.Reset()
		code := elect(ctx, args, &stdout, &stderr)
		if code != exitOK && code != exitNoLeader {
			t.Fatalf("elect partitions: exit %d, stderr %q; want 0 or 1", code, stderr.String())
		}
		tab = partition.Table{}
		if err := json.Unmarshal(stdout.Bytes(), &tab); err != nil {
			t.Fatalf("--json output %q: %v", stdout.String(), err)
		}
		if code == exitOK && len(tab.Members) == 2 && settledTable(&tab) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no settled table within 10 s; last: %s", stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
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
