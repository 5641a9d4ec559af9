package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/etcd"
	"github.com/leaderkit/elector/redlock"
	"github.com/leaderkit/elector/zookeeper"
)

// A store makes one Backend per candidate, as separate processes would
// have.
type store struct {
	desc  string
	join  func() (*member, error)
	close func()
}

// member is one candidate's connection to the store.
type member struct {
	b elector.Backend
	// crash cuts the candidate off without a goodbye (no release, no
	// renewal), as a crashed process would be; nil when the store has no
	// simple way to do it.
	crash func()
	close func()
}

// openStore returns the store the flags select: an embedded etcd by default.
func openStore(etcdAddrs, redisAddrs, zkAddrs string, ttl time.Duration) (*store, error) {
	switch {
	case etcdAddrs != "":
		return etcdStore(split(etcdAddrs), "etcd at "+etcdAddrs, func() {}), nil
	case redisAddrs != "":
		return redisStore(split(redisAddrs)), nil
	case zkAddrs != "":
		return zkStore(split(zkAddrs), ttl), nil
	}
	e, err := startEmbeddedEtcd()
	if err != nil {
		return nil, err
	}
	return etcdStore([]string{e.Endpoint}, "embedded etcd at "+e.Endpoint, e.Close), nil
}

func split(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func etcdStore(endpoints []string, desc string, closeStore func()) *store {
	return &store{desc: desc, close: closeStore, join: func() (*member, error) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, err
		}
		b, err := etcd.New(cli, nil)
		if err != nil {
			_ = cli.Close()
			return nil, err
		}
		return &member{
			b:     b,
			crash: func() { _ = cli.Close() },
			close: func() { _ = b.Close(); _ = cli.Close() },
		}, nil
	}}
}

func redisStore(addrs []string) *store {
	return &store{desc: fmt.Sprintf("Redlock over %d Redis masters", len(addrs)), close: func() {}, join: func() (*member, error) {
		clients := make([]redis.UniversalClient, len(addrs))
		for i, a := range addrs {
			clients[i] = redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true})
		}
		closeClients := func() {
			for _, c := range clients {
				_ = c.Close()
			}
		}
		b, err := redlock.New(clients, nil)
		if err != nil {
			closeClients()
			return nil, err
		}
		return &member{b: b, crash: closeClients, close: func() { _ = b.Close(); closeClients() }}, nil
	}}
}

func zkStore(servers []string, ttl time.Duration) *store {
	return &store{desc: "ZooKeeper at " + strings.Join(servers, ","), close: func() {}, join: func() (*member, error) {
		b, err := zookeeper.New(servers, nil)
		if err != nil {
			return nil, err
		}
		return &member{b: b, close: func() { _ = b.Close() }}, nil
	}}
}

// checkStore fails fast when the store is unreachable.
func checkStore(ctx context.Context, m *member) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := m.b.Leader(ctx, "quickstart-probe")
	if err != nil && !errors.Is(err, elector.ErrNoLeader) {
		return fmt.Errorf("store unreachable: %w", err)
	}
	return nil
}
