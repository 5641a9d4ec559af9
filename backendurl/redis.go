package backendurl

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/redlock"
)

// openRedis opens redis:// and rediss:// URLs: one client per host, a
// Redlock backend over them.
func openRedis(_ context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	addrs, err := hosts(u, "6379")
	if err != nil {
		return nil, nil, err
	}
	db := 0
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		if db, err = strconv.Atoi(p); err != nil || db < 0 {
			return nil, nil, fmt.Errorf("path %q: want a database number such as /0, or no path", u.Path)
		}
	}
	p, err := newParams(u)
	if err != nil {
		return nil, nil, err
	}
	opts := &redlock.Options{
		KeyPrefix:   p.str("prefix"),
		NoKeyPrefix: p.boolean("no_prefix"),
		NodeTimeout: p.duration("node_timeout"),
		DriftFactor: p.float("drift_factor"),
	}
	dial := p.duration("dial_timeout")
	tlsCfg, err := p.tlsConfig(u.Scheme == "rediss", "redis")
	if err != nil {
		return nil, nil, err
	}
	if err := p.finish(); err != nil {
		return nil, nil, err
	}
	password, _ := u.User.Password()
	clients := make([]redis.UniversalClient, len(addrs))
	cs := make(closers, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{
			Addr:                  a,
			Username:              u.User.Username(),
			Password:              password,
			DB:                    db,
			TLSConfig:             tlsCfg,
			DialTimeout:           dial,
			ContextTimeoutEnabled: true, // so that NodeTimeout bounds every request
			DisableIdentity:       true, // no CLIENT SETINFO round trip on each connection
		})
		clients[i], cs[i] = c, c
	}
	b, err := redlock.New(clients, opts)
	if err != nil {
		_ = cs.Close()
		return nil, nil, err
	}
	return b, append(closers{b}, cs...), nil
}
