package redlock

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
)

// TestNewRefusesDuplicateNodes: with A,A,A,D,E and D, E down, A alone
// would make a "quorum" of three: a phantom leader. New refuses
// the same client twice and two clients addressing one server.
func TestNewRefusesDuplicateNodes(t *testing.T) {
	t.Parallel()
	client := func(network, addr string) *redis.Client {
		c := redis.NewClient(&redis.Options{Network: network, Addr: addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a := client("tcp", "127.0.0.1:7004")
	for _, tc := range []struct {
		name    string
		clients []redis.UniversalClient
		want    string
	}{
		{"same client", []redis.UniversalClient{a, client("tcp", "h2:1"), a}, "clients[2] is clients[0] again"},
		{"same address", []redis.UniversalClient{a, client("tcp", "127.0.0.1:7004")}, "clients[0] and clients[1] both address the Redis server 127.0.0.1:7004"},
		{"host case and dot", []redis.UniversalClient{client("tcp", "Redis-A.example.:6379"), client("tcp", "redis-a.example:6379")}, "redis-a.example:6379"},
		{"IPv6 spelling", []redis.UniversalClient{client("tcp", "[::1]:6379"), client("tcp", "[0:0::1]:06379")}, "[::1]:6379"},
		{"IPv4-mapped", []redis.UniversalClient{client("tcp", "127.0.0.1:1"), client("tcp", "[::ffff:127.0.0.1]:1")}, "127.0.0.1:1"},
		{"unix socket", []redis.UniversalClient{client("unix", "/run/redis.sock"), client("unix", "/run//redis.sock")}, "unix:/run/redis.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(tc.clients, nil)
			if err == nil {
				_ = b.Close()
			}
			if !errors.Is(err, backend.ErrInvalid) || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: got %v, want an error wrapping ErrInvalid containing %q: one server counts once", err, tc.want)
			}
		})
	}
	b, err := New([]redis.UniversalClient{client("tcp", "127.0.0.1:1"), client("tcp", "127.0.0.1:2"), client("unix", "/run/redis.sock")}, nil)
	if err != nil {
		t.Fatalf("New over three distinct servers: got %v, want nil", err)
	}
	_ = b.Close()
}

// TestURLRefusesDuplicateHosts: the redis:// host list names each master
// once; a repeated host (however spelled) is refused, naming it.
func TestURLRefusesDuplicateHosts(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"redis://127.0.0.1:7004,127.0.0.1:7004,127.0.0.1:7004,h4,h5": "names the Redis server 127.0.0.1:7004 twice (hosts 1 and 2)",
		"redis://h1,H1:6379":                  "names the Redis server h1:6379 twice",
		"rediss://:pw@[::1]:7000,[0::1]:7000": "names the Redis server [::1]:7000 twice",
	} {
		_, c, err := backendurl.Open(t.Context(), raw)
		if err == nil {
			_ = c.Close()
		}
		if !errors.Is(err, backend.ErrInvalid) || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): got %v, want an error wrapping ErrInvalid containing %q", raw, err, want)
		}
	}
}

// TestWarnings: a single master and an even number of masters are valid
// but weak; Warnings says why, and says nothing for 3 or 5.
func TestWarnings(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{
		1: "a single Redis master tolerates no failure",
		2: "2 Redis masters need a quorum of 2, so they tolerate no more failed masters (0) than 1 would",
		4: "4 Redis masters need a quorum of 3, so they tolerate no more failed masters (1) than 3 would",
		3: "",
		5: "",
	} {
		clients := make([]redis.UniversalClient, n)
		for i := range clients {
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + string(rune('1'+i)), ContextTimeoutEnabled: true})
			defer c.Close()
			clients[i] = c
		}
		b, err := New(clients, nil)
		if err != nil {
			t.Fatalf("New over %d masters: %v", n, err)
		}
		got := strings.Join(b.Warnings(), "; ")
		_ = b.Close()
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("Warnings() over %d masters: got %q, want %q", n, got, want)
		}
	}
}
