package zookeeper

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
)

func TestValidateElection(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a", "a/b", "zookeeper", "a/zookeeper", "with space", "ünïcode-名前", "a-latch-0000000001", "x_c_y"} {
		if err := validateElection(name); err != nil {
			t.Errorf("validateElection(%q): got %v, want nil: ZooKeeper can store it", name, err)
		}
	}
	for _, name := range []string{"", "a//b", "emoji-😀", "private-\ue000", "special-\ufff0", "c1-\u0085", "_c_x", "a/_c_x-latch-0000000001"} {
		if err := validateElection(name); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("validateElection(%q): got %v, want an error wrapping ErrInvalid", name, err)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	t.Parallel()
	bad := []Options{
		{Prefix: "elector"},
		{Prefix: "/"},
		{Prefix: "/a/"},
		{Prefix: "/zookeeper"},
		{Prefix: "/zookeeper/x"},
		{Prefix: "/a//b"},
		{DisconnectGrace: -time.Second},
		{DriftFactor: -0.1},
		{DriftFactor: 0.6},
		{Auth: []Auth{{Secret: []byte("u:p")}}},
	}
	for _, o := range bad {
		if b, err := New([]string{"127.0.0.1:1"}, &o); err == nil {
			b.Close()
			t.Errorf("New(%+v): got nil error, want a message naming the field", o)
		} else if !strings.Contains(err.Error(), "Options.") || !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("New(%+v): got %q, want it to name the Options field and wrap ErrInvalid", o, err)
		}
	}
	if _, err := New(nil, nil); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("New(nil servers): got %v, want an error wrapping ErrInvalid", err)
	}
	cfg, err := (*Options)(nil).config()
	if err != nil || cfg.prefix != DefaultPrefix || cfg.drift != backend.DefaultDriftFactor || cfg.grace != 0 || len(cfg.acl) != 1 {
		t.Errorf("nil Options: got (%+v, %v), want the documented defaults", cfg, err)
	}
}

func TestCandidateOrder(t *testing.T) {
	t.Parallel()
	kids := []string{
		"b", // a child election
		"_c_6a1b4a7e-42f7-4c3e-9d39-3f1a7c5b2e10-latch-0000000012",
		"latch-0000000001", // not protected: not a LeaderLatch node
		"_c_0123456789abcdef0123456789abcdef-lock-0000000002", // a go-zookeeper Lock
		"_c_ffffffff-0000-4000-8000-000000000000-latch-0000000003",
		"_c_x-latch-", // no sequence
		"_c_00000000-0000-4000-8000-000000000000-latch-0000000007",
	}
	got := sortCandidates(kids)
	want := []string{
		"_c_ffffffff-0000-4000-8000-000000000000-latch-0000000003",
		"_c_00000000-0000-4000-8000-000000000000-latch-0000000007",
		"_c_6a1b4a7e-42f7-4c3e-9d39-3f1a7c5b2e10-latch-0000000012",
	}
	if len(got) != len(want) {
		t.Fatalf("sortCandidates: got %v, want %v: only LeaderLatch nodes, by sequence", got, want)
	}
	for i := range want {
		if got[i].name != want[i] {
			t.Fatalf("sortCandidates[%d]: got %s, want %s: Curator sorts by the text after the last latch-", i, got[i].name, want[i])
		}
	}
}

func TestUUID4(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for _, b := range [][16]byte{{}, {0: 0xff, 6: 0xff, 8: 0xff, 15: 0xff}} {
		if s := uuid4(b); !re.MatchString(s) {
			t.Errorf("uuid4(%x): got %q, want the 36-character form of Java's UUID.randomUUID", b, s)
		}
	}
}

// recorder is a wireObserver that records what it is told.
type recorder struct {
	handshakes []int64
	timeout    time.Duration
	handSent   time.Time
	sent       []time.Time
	containers []string
}

func (r *recorder) handshake(id int64, timeout time.Duration, sent time.Time) {
	r.handshakes = append(r.handshakes, id)
	r.timeout, r.handSent = timeout, sent
}
func (r *recorder) heard(sent time.Time) { r.sent = append(r.sent, sent) }
func (r *recorder) restored()            {}
func (r *recorder) wroteCreate()         {}
func (r *recorder) wroteContainer(p string) {
	r.containers = append(r.containers, p)
}
func (r *recorder) created(string, int64) {}

// TestTrackedConn feeds a trackedConn a client's writes and a server's
// replies in chunks of every size, and checks what it learns.
func TestTrackedConn(t *testing.T) {
	t.Parallel()
	requests := [][]byte{
		frame(i32(0), i64(0), i32(4000), i64(0), i32(16), make([]byte, 16)), // ConnectRequest
		frame(i32(1), i32(opCreate), []byte("/path")),
		frame(i32(-2), i32(11)), // ping
		frame(i32(2), i32(3), []byte("/x")),
		frame(i32(3), i32(opContainer), i32(10), []byte("/elector/a"), i32(0)),
		frame(i32(4), i32(opContainer), i32(headMax), bytes.Repeat([]byte("a"), headMax)), // longer than the head kept
	}
	replies := bytes.Join([][]byte{
		frame(i32(0), i32(4000), i64(77), i32(16), make([]byte, 16)),
		frame(i32(1), i64(100), i32(0), []byte("payload")),
		frame(i32(-1), i64(-1), i32(0), []byte("event")),
		frame(i32(-2), i64(100), i32(0)),
		frame(i32(2), i64(100), i32(errCodeExpiry)),
	}, nil)
	for _, chunk := range []int{1, 3, 7, len(replies)} {
		client, server := net.Pipe()
		rec := &recorder{}
		c := newTrackedConn(client, rec, false)
		go func() {
			for _, r := range requests {
				buf := make([]byte, len(r))
				io.ReadFull(server, buf)
			}
			for p := replies; len(p) > 0; p = p[min(chunk, len(p)):] {
				server.Write(p[:min(chunk, len(p))])
			}
			server.Close()
		}()
		var sends []time.Time
		for _, r := range requests {
			sends = append(sends, time.Now())
			for p := r; len(p) > 0; p = p[min(chunk, len(p)):] {
				if _, err := c.Write(p[:min(chunk, len(p))]); err != nil {
					t.Fatal(err)
				}
			}
		}
		buf := make([]byte, 5)
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		c.Close()
		if len(rec.handshakes) != 1 || rec.handshakes[0] != 77 || rec.timeout != 4*time.Second || rec.handSent.Before(sends[0]) {
			t.Errorf("chunks of %d: handshake got (%v, %v, sent %v), want session 77, timeout 4s, sent with the ConnectRequest", chunk, rec.handshakes, rec.timeout, rec.handSent)
		}
		if len(rec.sent) != 2 || rec.sent[0].Before(sends[1]) || rec.sent[0].After(sends[2]) || rec.sent[1].Before(sends[2]) || rec.sent[1].After(sends[3]) {
			t.Errorf("chunks of %d: heard %v, want the send times of xid 1 and of the ping only (not the event or the expired reply)", chunk, rec.sent)
		}
		if want := []string{"/elector/a", ""}; !slices.Equal(rec.containers, want) {
			t.Errorf("chunks of %d: container creates written %q, want %q (the path, or \"\" when the head cuts it)", chunk, rec.containers, want)
		}
	}
}

// TestTrackedConnHoldsRepliesUntilWatchesRestored: on a connection that
// resumes a session, the first reply after the handshake reaches
// go-zookeeper only once its SetWatches request is written, or after
// holdBound of the session's timeout when it writes none (at most an
// eighth of the timeout: go-zookeeper's read deadline is two thirds of it);
// a session's first connection is not held.
func TestTrackedConnHoldsRepliesUntilWatchesRestored(t *testing.T) {
	t.Parallel()
	reply := frame(i32(1), i64(100), i32(0))
	setWatches := frame(i32(xidSetWatches), i32(101), i64(100), i32(0), i32(0), i32(0))

	for _, tc := range []struct {
		name    string
		timeout int32 // ms, the handshake's
		resumed bool
		rewatch bool          // the client writes SetWatches after the handshake
		held    time.Duration // how long the reply is held
	}{
		{"first connection", 4000, false, false, 0},
		{"resumed, watches restored", 4000, true, true, 100 * time.Millisecond},
		{"resumed, no watches to restore, 4s session", 4000, true, false, 500 * time.Millisecond},
		{"resumed, no watches to restore, 2s session", 2000, true, false, 250 * time.Millisecond},
		{"resumed, no watches to restore, 30s session", 30000, true, false, restoreWait},
	} {
		connect := frame(i32(0), i64(0), i32(tc.timeout), i64(77), i32(16), make([]byte, 16))
		handshake := frame(i32(0), i32(tc.timeout), i64(77), i32(16), make([]byte, 16))
		synctest.Test(t, func(t *testing.T) {
			client, server := net.Pipe()
			defer server.Close()
			c := newTrackedConn(client, &recorder{}, tc.resumed)
			defer c.Close()
			go func() {
				io.Copy(io.Discard, server) // the client's requests
			}()
			go func() {
				server.Write(handshake)
				server.Write(reply)
			}()
			if _, err := c.Write(connect); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, make([]byte, len(handshake))); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			got := make(chan time.Duration, 1)
			go func() {
				io.ReadFull(c, make([]byte, len(reply)))
				got <- time.Since(began)
			}()
			if tc.rewatch {
				time.Sleep(tc.held) // go-zookeeper a little late to re-send its watches
				if _, err := c.Write(setWatches); err != nil {
					t.Fatal(err)
				}
			}
			if d := <-got; d != tc.held {
				t.Errorf("%s: the reply after the handshake reached go-zookeeper after %v, want %v", tc.name, d, tc.held)
			}
		})
	}
}

// frame is a frame of the client protocol with body as its content.
func frame(body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func i32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
