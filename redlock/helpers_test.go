package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/internal/testenv"
)

// errIsolated is what an isolated node set answers.
var errIsolated = errors.New("isolated by the test harness")

// errReplyLost is what a node set answers while its replies are lost.
var errReplyLost = errors.New("reply lost by the test harness")

// nodes is a set of clients, one per test Redis master, that a test can cut
// off (every command fails) or make deaf to the replies (every command
// runs, and fails as if its reply never came), and close together. With
// cutAfter set, the next command whose arguments mention it runs, its reply
// is lost and the set is cut off: a node that ran a request too late to
// answer and was unreachable after.
type nodes struct {
	clients   []redis.UniversalClient
	isolated  atomic.Bool
	lostReply atomic.Bool
	cutAfter  atomic.Pointer[string]
}

// isolateHook fails every command while its node set is isolated, and
// every reply while they are lost.
type isolateHook struct{ n *nodes }

func (h isolateHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h isolateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.n.isolated.Load() {
			cmd.SetErr(errIsolated)
			return errIsolated
		}
		err := next(ctx, cmd)
		if s := h.n.cutAfter.Load(); err == nil && s != nil && strings.Contains(fmt.Sprint(cmd.Args()...), *s) && h.n.cutAfter.CompareAndSwap(s, nil) {
			h.n.isolated.Store(true)
			cmd.SetErr(errReplyLost)
			return errReplyLost
		}
		if err == nil && h.n.lostReply.Load() {
			cmd.SetErr(errReplyLost)
			return errReplyLost
		}
		return err
	}
}
func (h isolateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// clientOptions are the options every test client uses: context deadlines
// honoured, as New requires.
func clientOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, ContextTimeoutEnabled: true}
}

// newNodes returns clients on addrs, closed at the end of the test.
func newNodes(t testing.TB, addrs []string) *nodes { return newNodesWith(t, addrs, nil) }

// newNodesWith is newNodes with tune, when not nil, applied to each
// client's options.
func newNodesWith(t testing.TB, addrs []string, tune func(*redis.Options)) *nodes {
	n := &nodes{}
	for _, a := range addrs {
		o := clientOptions(a)
		if tune != nil {
			tune(o)
		}
		c := redis.NewClient(o)
		c.AddHook(isolateHook{n})
		n.clients = append(n.clients, c)
	}
	t.Cleanup(n.close)
	return n
}

var closeMu sync.Mutex

func (n *nodes) close() {
	closeMu.Lock()
	defer closeMu.Unlock()
	for _, c := range n.clients {
		_ = c.Close()
	}
}

// testRequestTimeout is the RequestTimeout of test Backends unless a test sets
// one: generous, since CI runs every package's tests at once on two cores,
// where a node or this process stalls for seconds. A test that needs a
// round to time out sets its own, or cuts the nodes off (which fails at
// once).
const testRequestTimeout = 5 * time.Second

// newBackend returns a Backend over fresh clients on the five test nodes,
// closed at the end of the test.
func newBackend(t testing.TB, opts *Options) (*Backend, *nodes) {
	t.Helper()
	n := newNodes(t, testenv.RedisAddrs(t))
	o := Options{RequestTimeout: testRequestTimeout}
	if opts != nil {
		o = *opts
		if o.RequestTimeout == 0 {
			o.RequestTimeout = testRequestTimeout
		}
	}
	b, err := New(n.clients, &o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, n
}

// testCtx returns a context that ends with the test, bounded as a watchdog.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
