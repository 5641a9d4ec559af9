package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// slowDial makes every new connection take delay before it is dialled, as
// a busy host makes the TCP and HELLO handshakes of a fresh client slow.
type slowDial struct{ delay time.Duration }

func (s slowDial) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(s.delay)
		return next(ctx, network, addr)
	}
}
func (slowDial) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (slowDial) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFirstRoundConnects: the first Campaign and the first Leader of a
// fresh Backend, whose connections take longer to make than RequestTimeout
// allows a request, find their quorum: the connections are made (and the
// scripts loaded) before the first round, bounded by warmTimeout, instead
// of inside it, where a fresh replica on a busy host reported "quorum
// unreachable". The dial takes 100 ms more than RequestTimeout, so a round
// that made its connection fails whatever the load; the rest of
// warmTimeout (1 s), and RequestTimeout itself, are the slack a loaded
// machine has for the handshakes and for the round. Not t.Parallel: that
// slack (600 ms, then a 300 ms round) leaves no room for other tests' load.
func TestFirstRoundConnects(t *testing.T) {
	fresh := func() *Backend {
		var clients []redis.UniversalClient
		for _, a := range testenv.RedisAddrs(t) {
			c := redis.NewClient(clientOptions(a))
			c.AddHook(slowDial{400 * time.Millisecond})
			clients = append(clients, c)
			t.Cleanup(func() { _ = c.Close() })
		}
		b, err := New(clients, &Options{RequestTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	ctx := testCtx(t)
	election := fmt.Sprintf("warm-%d", time.Now().UnixNano())
	if _, err := fresh().Leader(ctx, election); !errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("first Leader of a fresh Backend: %v; want ErrNoLeader", err)
	}
	l, err := fresh().Campaign(ctx, backend.Candidate{Election: election, Identity: "a", TTL: 2 * time.Second})
	if err != nil {
		t.Fatalf("first Campaign of a fresh Backend: %v; want a lease", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
}
