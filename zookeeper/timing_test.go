package zookeeper

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

func TestMinSafeTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tick      time.Duration
		syncLimit int
		want      time.Duration
	}{
		{2 * time.Second, 5, 30250 * time.Millisecond}, // zoo_sample.cfg
		{100 * time.Millisecond, 5, 1750 * time.Millisecond},
		{500 * time.Millisecond, 10, 14 * time.Second},
		{2 * time.Second, 0, 0}, // standalone: no followers
	} {
		if got := MinSafeTTL(tc.tick, tc.syncLimit); got != tc.want {
			t.Errorf("MinSafeTTL(%v, %d) = %v, want %v: 2.5 × ((syncLimit + 1) × tickTime + 100ms)", tc.tick, tc.syncLimit, got, tc.want)
		}
	}
}

// TestTimingFromConf checks that a Backend learns an ensemble's timing from
// the servers' conf four-letter word, assumes the stock timing when the
// servers refuse conf (ZooKeeper's default whitelist), and that stated
// Options win.
func TestTimingFromConf(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		servers   []string
		opts      *Options
		tick      time.Duration
		syncLimit int
		source    string
	}{
		{testenv.ZKServers(t), nil, 100 * time.Millisecond, 5, "conf of 127.0.0.1:"},
		{testenv.ZKStockServers(t), nil, 2 * time.Second, 5, "assumed"}, // conf not whitelisted, as shipped
		{testenv.ZKServers(t), &Options{TickTime: 3 * time.Second, SyncLimit: 4}, 3 * time.Second, 4, "Options"},
	} {
		b, err := New(tc.servers, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Timing(ctx)
		b.Close()
		if err != nil {
			t.Fatalf("Timing of %v: %v", tc.servers, err)
		}
		if got.TickTime != tc.tick || got.SyncLimit != tc.syncLimit || !strings.HasPrefix(got.Source, tc.source) {
			t.Errorf("Timing of %v: got %+v, want tickTime %v, syncLimit %d, source %q…", tc.servers, got, tc.tick, tc.syncLimit, tc.source)
		}
	}
}

// TestStockEnsembleRefusesShortTTLs checks that on an ensemble as
// ZooKeeper ships it (tickTime 2s, syncLimit 5, conf not whitelisted) a
// Campaign with the Elector's default TTL, 15s, is refused with an error
// naming the numbers, the assumption and the ways out; that a TTL of
// MinSafeTTL is accepted; and that the refused TTL's session is closed.
func TestStockEnsembleRefusesShortTTLs(t *testing.T) {
	t.Parallel()
	b, err := New(testenv.ZKStockServers(t), &Options{Prefix: testPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	election := "stock-" + randomSuffix()
	_, err = b.Campaign(ctx, backend.Candidate{Election: election, Identity: "alice", TTL: 15 * time.Second})
	if !errors.Is(err, backend.ErrInvalid) {
		t.Fatalf("Campaign with TTL 15s: got %v, want a refusal wrapping ErrInvalid", err)
	}
	for _, w := range []string{"TTL 15s is below 30.25s", "syncLimit 5 × tickTime 2s, assumed", "at least 30.25s",
		"(syncLimit + 1) × tickTime at most 5.9s", "Options.TickTime and Options.SyncLimit", "4lw.commands.whitelist=srvr,conf"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q: want it to contain %q", err, w)
		}
	}
	if n := b.sessionCount(); n != 0 {
		t.Fatalf("sessions after the refusal: got %d, want 0", n)
	}
	// An Elector with the default TTL (15s) stops at its first Campaign
	// with the refusal, rather than lead unsafely.
	e, err := elector.New(b, election, &elector.Options{OnElected: func(context.Context, elector.Term) {
		t.Error("elected on a stock ensemble with a 15s TTL")
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(ctx); !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "TTL 15s is below 30.25s") {
		t.Fatalf("Run with the default TTL: got %v, want the driver's refusal", err)
	}
	l, err := b.Campaign(ctx, backend.Candidate{Election: election, Identity: "alice", TTL: MinSafeTTL(2*time.Second, 5)})
	if err != nil {
		t.Fatalf("Campaign with TTL %v: %v", MinSafeTTL(2*time.Second, 5), err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTimingUnansweredIsNotKept checks that Timing gives up on servers that
// do not answer after about confWait, assumes the stock timing, and asks
// again next time; that neither MinTTL nor Campaign takes that assumption
// for the ensemble's answer; and that a cancelled ctx ends the wait with
// its error.
func TestTimingUnansweredIsNotKept(t *testing.T) {
	t.Parallel()
	hung := testenv.SilentListener(t)
	b, err := New([]string{hung}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	got, err := b.Timing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.TickTime != 2*time.Second || got.SyncLimit != 5 || !strings.HasPrefix(got.Source, "assumed") {
		t.Fatalf("Timing of a server that does not answer: got %+v, want the assumed tickTime 2s, syncLimit 5", got)
	}
	if d := time.Since(start); d > confWait+5*time.Second {
		t.Fatalf("Timing took %v, want at most about %v", d, confWait)
	}
	if b.timing.known {
		t.Fatal("an unanswered Timing was kept; want it asked again")
	}
	// The floor is not known, and a TTL below the assumed one is not
	// refused for good: a slow ensemble may allow it.
	if d, why, err := b.MinTTL(t.Context()); err == nil || !strings.Contains(err.Error(), "no server answered") {
		t.Errorf("MinTTL of a server that does not answer: got %v (%q), %v; want an error saying no server answered", d, why, err)
	}
	err = got.checkTTL(2 * time.Second)
	if err == nil || errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "asks again") {
		t.Errorf("checkTTL(2s) on the unanswered timing: got %v; want an error that is not ErrInvalid and says the next Campaign asks again", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := b.Timing(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Timing with a cancelled ctx: got %v, want context.Canceled", err)
	}
}

func TestTimingOptionsValidated(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{
		{TickTime: time.Second},
		{SyncLimit: 5},
		{TickTime: -time.Second, SyncLimit: 5},
		{TickTime: time.Second, SyncLimit: -1},
		{TickTime: time.Microsecond, SyncLimit: 5},
	} {
		_, err := New([]string{"127.0.0.1:2181"}, &o)
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "Options.") {
			t.Errorf("New with TickTime %v, SyncLimit %d: got %v, want ErrInvalid naming the option", o.TickTime, o.SyncLimit, err)
		}
	}
}

// TestMinTTLReportsTheFloor checks backend.TTLFloor: the floor Campaign
// enforces, and the timing it follows from.
func TestMinTTLReportsTheFloor(t *testing.T) {
	t.Parallel()
	b, err := New(testenv.ZKServers(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var f backend.TTLFloor = b
	floor, why, err := f.MinTTL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if floor != 1750*time.Millisecond || !strings.HasPrefix(why, "syncLimit 5 × tickTime 100ms, conf of 127.0.0.1:") {
		t.Fatalf("MinTTL: got %v, %q; want 1.75s for syncLimit 5 × tickTime 100ms, read with conf", floor, why)
	}
}

// TestTimingThroughProxy checks that the timing is read through a proxy
// that keeps the client's connection open after the server closed its
// end (as elect's tests and some load balancers do).
func TestTimingThroughProxy(t *testing.T) {
	t.Parallel()
	target := testenv.ZKServers(t)[0]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			go io.Copy(s, c)
			go io.Copy(c, s) // and never closes c
		}
	}()
	defer func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	b, err := New([]string{ln.Addr().String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	got, err := b.Timing(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got.TickTime != 100*time.Millisecond || got.SyncLimit != 5 {
		t.Fatalf("Timing through a proxy: got %+v after %v, want tickTime 100ms, syncLimit 5 from conf", got, time.Since(start))
	}
}

// A cancelled ctx ends askConf with its error even when a server's failure
// is ready at the same moment: the select may take either first.
func TestAskConfCancelled(t *testing.T) {
	t.Parallel()
	for i := range 1000 {
		ctx, cancel := context.WithCancel(context.Background())
		// The ctx ends as the dial fails, so the failure and the end are
		// both ready when askConf looks.
		refuse := func(string, string, time.Duration) (net.Conn, error) {
			cancel()
			return nil, errors.New("connection refused")
		}
		if _, err := askConf(ctx, []string{"127.0.0.1:1", "127.0.0.1:2"}, refuse); !errors.Is(err, context.Canceled) {
			t.Fatalf("attempt %d: askConf with a ctx cancelled meanwhile: %v; want context.Canceled", i, err)
		}
	}
}
