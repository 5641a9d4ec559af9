package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// lineWriter is a testenv.Buffer that also hands every write containing
// match (a slog handler writes one record per call) to lines, dropping
// those past its capacity.
type lineWriter struct {
	testenv.Buffer
	match string
	lines chan string
}

func newLineWriter(match string) *lineWriter {
	return &lineWriter{match: match, lines: make(chan string, 8)}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if s := string(p); strings.Contains(s, w.match) {
		select {
		case w.lines <- s:
		default:
		}
	}
	return n, err
}

// debugLogger returns a Logger at level Debug writing text to w.
func debugLogger(w *lineWriter) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// wantAll reports each of want that line lacks.
func wantAll(t *testing.T, line string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("debug log %q lacks %q", line, w)
		}
	}
}

// TestDebugLogsLostRound: with a Logger at level Debug, a candidate behind
// a holder logs each lost round — the outcome "held", the holder's identity
// and token, the tally and the wait — so that a slow takeover can be traced
// to the rounds that made it; at level Info nothing is logged.
func TestDebugLogsLostRound(t *testing.T) {
	t.Parallel()
	// Nodes just (re)started by servers.sh or an earlier test would be in
	// their restart delay, and the rounds quarantined, not held.
	const delay = time.Millisecond
	a, an := newBackend(t, &Options{RestartDelay: delay})
	out := newLineWriter("campaign round lost")
	b, _ := newBackend(t, &Options{RestartDelay: delay, Logger: debugLogger(out)})
	ctx := testCtx(t)
	e := name(t)
	const ttl = 10 * time.Second
	l, err := a.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	// Campaign returns at the first quorum; alice's request to the other
	// nodes may still be on its way, and bob would win those nodes (a
	// split, or a node whose counter bob raised first).
	for i, c := range an.clients {
		for c.Exists(ctx, a.lockKey(e)).Val() != 1 {
			if ctx.Err() != nil {
				t.Fatalf("alice's key never reached node %d", i+1)
			}
			runtime.Gosched()
		}
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		lb, err := b.Campaign(bctx, backend.Candidate{Election: e, Identity: "bob", TTL: ttl})
		if err == nil {
			_ = lb.Release(ctx)
			err = errors.New("bob won an election alice holds")
		}
		done <- err
	}()
	// Round 0 is retried at once (bob then listens for releases); round 1
	// waits for alice's keys to expire.
	var lines []string
	for len(lines) < 2 {
		select {
		case line := <-out.lines:
			lines = append(lines, line)
		case err := <-done:
			t.Fatalf("bob's Campaign returned %v before logging two lost rounds; log: %q", err, out.String())
		case <-time.After(10 * time.Second):
			t.Fatalf("no two lost rounds logged within 10s; log: %q", out.String())
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("bob's Campaign after cancel: got %v, want context.Canceled", err)
	}
	common := []string{
		`msg="redlock: campaign round lost"`,
		"election=" + e,
		" identity=bob",
		"outcome=held",
		"holder_identity=alice",
		"holder_token=" + strconv.FormatUint(l.Token(), 10),
		"free_in=",
	}
	wantAll(t, lines[0], append(common, "attempt=0", "wait=0s")...)
	wantAll(t, lines[1], append(common, "attempt=1", "capped=false")...)
	if strings.Contains(lines[1], "wait=0s") {
		t.Errorf("debug log %q: got no wait after the second lost round, want one until alice's keys can expire", lines[1])
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// At level Info nothing is logged for a lost round.
	quiet := newLineWriter("redlock:")
	c, _ := newBackend(t, &Options{RestartDelay: delay, Logger: slog.New(slog.NewTextHandler(quiet, nil))})
	l, err = a.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	wantWaits(t, c, backend.Candidate{Election: e, Identity: "carol", TTL: ttl}, 500*time.Millisecond, "alice holds the election")
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if s := quiet.String(); s != "" {
		t.Errorf("logged at level Info: %q; want nothing", s)
	}
}

// replies returns a round's replies, one per node: a value that is a
// string is a node's "held by" reply with that key value and PTTL 100 ms
// times its place; "ours" a grant; an error a failure; nil no reply yet.
// It also returns their tally.
func replies(nodes ...any) ([]*reply[acquired], tally) {
	got := make([]*reply[acquired], len(nodes))
	t := tally{nodes: len(nodes)}
	for i, n := range nodes {
		var r *reply[acquired]
		switch n := n.(type) {
		case nil:
			continue
		case error:
			r = &reply[acquired]{err: n}
		case string:
			if n == "ours" {
				r = &reply[acquired]{val: acquired{won: true, token: 7}}
				break
			}
			a, err := parseAcquired([]any{int64(0), int64(100 * (i + 1)), n}, nil)
			r = &reply[acquired]{val: a, err: err}
		}
		got[i] = r
		t.add(r.status(), func() string { return fmt.Sprintf("node %d: %v", i, r.err) })
	}
	return got, t
}

// TestLoseOutcomes: a round no quorum granted is read as held (with the
// wait until a quorum of the holder's keys can expire, and its value),
// split, quarantined, skipped, or a failure.
func TestLoseOutcomes(t *testing.T) {
	t.Parallel()
	alice := encodeValue(leaseID(newCampaignID(), 0), 41, "alice w/ space")
	bob := encodeValue(leaseID(newCampaignID(), 2), 42, "bob")
	aliceID := leaseID(newCampaignID(), 0)
	alice7, alice8 := encodeValue(aliceID, 7, "alice"), encodeValue(aliceID, 8, "alice")
	down := errors.New("connection refused")
	q3 := &quarantined{left: 3 * time.Second, runID: "r3"}
	q2 := &quarantined{left: 2 * time.Second, runID: "r2"}
	for _, tc := range []struct {
		name   string
		nodes  []any
		skip   []bool
		loss   loss
		wait   time.Duration
		holder string
		err    bool
	}{
		{"held on three of five", []any{alice, down, alice, nil, alice}, nil, lostHeld, 500 * time.Millisecond, alice, false},
		{"held, a rival's key counts as free", []any{bob, alice, alice, alice, "ours"}, nil, lostHeld, 200 * time.Millisecond, alice, false},
		// A node whose counter a rival raised first holds the lease with a
		// token of its own: the value most nodes hold is the lease's.
		{"held, one node with another token", []any{alice8, alice7, alice7, nil, nil}, nil, lostHeld, 300 * time.Millisecond, alice7, false},
		{"held, the other token on the last node", []any{alice7, alice7, nil, nil, alice8}, nil, lostHeld, 500 * time.Millisecond, alice7, false},
		{"foreign lock", []any{"Zm9yZWlnbg==", "Zm9yZWlnbg==", "Zm9yZWlnbg==", nil, nil}, nil, lostHeld, 300 * time.Millisecond, "Zm9yZWlnbg==", false},
		{"split", []any{alice, alice, bob, bob, "ours"}, nil, lostSplit, 0, "", false},
		{"quarantined", []any{alice, alice, q3, q2, down}, nil, lostQuarantined, 2 * time.Second, "", false},
		{"skipped", []any{alice, errSkipped, errSkipped, errSkipped, down}, []bool{false, true, true, true, false}, lostSkipped, 0, "", false},
		{"too few answered", []any{alice, alice, down, down, nil}, nil, notLost, 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, tl := replies(tc.nodes...)
			r := lose(context.Background(), &round[acquired]{skip: tc.skip}, got, tl, 3)
			if r.loss != tc.loss || r.wait != tc.wait || r.holder != tc.holder || (r.err != nil) != tc.err {
				t.Errorf("got loss %v, wait %v, holder %q, err %v; want %v, %v, %q, error %v",
					r.loss, r.wait, r.holder, r.err, tc.loss, tc.wait, tc.holder, tc.err)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, tl := replies(nil, nil, nil, nil, nil)
	if r := lose(ctx, &round[acquired]{}, got, tl, 3); r.loss != notLost || r.err != nil {
		t.Errorf("ctx ended: got loss %v, err %v; want neither", r.loss, r.err)
	}
}

// TestParseAcquiredHolder: a "held" reply's holder is the value's first
// word, as the acquire script used to send it, and the value is kept whole.
func TestParseAcquiredHolder(t *testing.T) {
	t.Parallel()
	for value, holder := range map[string]string{
		"0123456789abcdef0123456789abcdef.3 17 alice w/ space": "0123456789abcdef0123456789abcdef.3",
		"Zm9yZWlnbg==": "Zm9yZWlnbg==",
		"":             "",
	} {
		a, err := parseAcquired([]any{int64(0), int64(-1), value}, nil)
		if err != nil || a.won || a.holder != holder || a.value != value || a.pttl != never {
			t.Errorf("parseAcquired(0, -1, %q): got %+v, %v; want holder %q, the value whole, PTTL never", value, a, err, holder)
		}
	}
}

// TestLogRoundLines: each outcome's debug line carries the attributes that
// explain it, a failed round logs its error, and nothing is logged at level
// Info or without a Logger.
func TestLogRoundLines(t *testing.T) {
	t.Parallel()
	alice := encodeValue(leaseID(newCampaignID(), 0), 41, "alice w/ space")
	c := backend.Candidate{Election: "e/1", Identity: "bob", TTL: time.Second}
	_, tHeld := replies(alice, alice, alice, nil, errors.New("connection refused"))
	for _, tc := range []struct {
		name   string
		r      acquireResult
		splits int
		wait   time.Duration
		want   []string
	}{
		{"held", acquireResult{loss: lostHeld, wait: 300 * time.Millisecond, holder: alice, took: 3 * time.Millisecond, tally: tHeld}, 0, 302 * time.Millisecond,
			[]string{`msg="redlock: campaign round lost"`, "election=e/1", " identity=bob", "attempt=4", "outcome=held", "took=3ms", "yes=0", "no=3", "failed=1", "pending=1",
				`holder_identity="alice w/ space"`, "holder_token=41", "free_in=300ms", "capped=false", "wait=302ms", `failures="node 4: connection refused"`}},
		{"held without expiry", acquireResult{loss: lostHeld, wait: never, holder: alice, tally: tHeld}, 0, time.Second + time.Millisecond,
			[]string{"outcome=held", "capped=true", "wait=1.001s"}},
		{"foreign lock", acquireResult{loss: lostHeld, wait: 50 * time.Millisecond, holder: "Zm9yZWlnbg=="}, 0, 0,
			[]string{"outcome=held", "holder_foreign=true", "free_in=50ms", "wait=0s"}},
		{"split", acquireResult{loss: lostSplit, took: 2 * time.Millisecond}, 3, 5 * time.Millisecond,
			[]string{"outcome=split", "took=2ms", "splits=3", "wait=5ms"}},
		{"quarantined", acquireResult{loss: lostQuarantined, wait: 2 * time.Second}, 0, time.Second,
			[]string{"outcome=quarantined", "free_in=2s", "capped=true", "wait=1s"}},
		{"skipped", acquireResult{loss: lostSkipped}, 1, time.Millisecond,
			[]string{"outcome=skipped", "splits=1", "wait=1ms"}},
		{"failed", acquireResult{err: errors.New("quorum unreachable"), took: 250 * time.Millisecond, tally: tHeld}, 0, 0,
			[]string{`msg="redlock: campaign round failed"`, "attempt=4", "took=250ms", "no=3", "failed=1", `error="quorum unreachable"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := newLineWriter("redlock:")
			b := &Backend{cfg: config{logger: debugLogger(out)}}
			b.logRound(context.Background(), c, 4, &tc.r, tc.splits, tc.wait)
			wantAll(t, out.String(), tc.want...)
			if tc.r.loss != lostHeld && strings.Contains(out.String(), "holder") {
				t.Errorf("debug log %q names a holder; want none for %v", out.String(), tc.r.loss)
			}
		})
	}
	quiet := newLineWriter("redlock:")
	r := acquireResult{loss: lostHeld, holder: alice, tally: tHeld}
	(&Backend{cfg: config{logger: slog.New(slog.NewTextHandler(quiet, nil))}}).logRound(context.Background(), c, 0, &r, 0, 0)
	(&Backend{}).logRound(context.Background(), c, 0, &r, 0, 0) // no Logger: no panic
	if s := quiet.String(); s != "" {
		t.Errorf("logged at level Info: %q; want nothing", s)
	}
}
