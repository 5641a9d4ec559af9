package integration_test

// The peers of the scale benchmark, each holding many elections the way its
// users would: redsync with one Extend per mutex every TTL/3, etcd
// concurrency.Election on one shared Session, go-zookeeper zk.Lock on one
// connection.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-zookeeper/zk"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/leaderkit/elector/internal/term"
	"github.com/leaderkit/elector/internal/testenv"
)

// holdRedsync holds each election with a redsync mutex, extended by its own
// goroutine every TTL/3.
func holdRedsync(tb testing.TB, ctx context.Context, g *scaleLedger, prefix string, ttl time.Duration) func() {
	rs := newRedlockRedsync(tb)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range g.n {
		name := fmt.Sprintf("%s/%d", prefix, i)
		wg.Go(func() {
			m := rs.NewMutex(name, redsync.WithExpiry(ttl), redsync.WithTries(1<<20), redsync.WithRetryDelay(50*time.Millisecond))
			if err := m.LockContext(ctx); err != nil {
				return
			}
			g.elected(name, 1)
			defer func() { _, _ = m.UnlockContext(context.WithoutCancel(ctx)) }()
			t := time.NewTicker(ttl / 3)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				began := time.Now()
				ok, err := m.ExtendContext(ctx)
				if ctx.Err() != nil {
					return
				}
				if !ok && err == nil {
					err = fmt.Errorf("extend refused")
				}
				g.renewed(time.Since(began), err)
				if err != nil {
					g.ended(name, err)
					return
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

// holdEtcdElections holds each election with a concurrency.Election, all on
// one Session with the TTL in whole seconds.
func holdEtcdElections(tb testing.TB, ctx context.Context, g *scaleLedger, prefix string, ttl time.Duration) func() {
	cli := etcdClient(tb, etcdEndpoints(tb)...)
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(ttl/time.Second)))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range g.n {
		name := fmt.Sprintf("etcd-it/%s/%d", prefix, i)
		wg.Go(func() {
			e := concurrency.NewElection(s, name)
			if !campaignEtcd(ctx, e, g) {
				return
			}
			g.elected(name, uint64(e.Rev()))
			select {
			case <-ctx.Done():
			case <-s.Done():
				g.ended(name, fmt.Errorf("session lost"))
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
		_ = s.Close() // revokes the lease: every key goes with it
	}
}

// campaignEtcd campaigns with e until it wins or ctx ends, as a user of
// concurrency.Election must: Campaign returns the server's refusal (etcd
// answers "too many requests" while its apply loop lags thousands of
// proposals behind, as during a cold start of 10,000 campaigns) and does
// not retry it. Each failure is counted in g and retried after a jittered
// backoff. It reports whether e won.
func campaignEtcd(ctx context.Context, e *concurrency.Election, g *scaleLedger) bool {
	for attempt := 0; ; attempt++ {
		err := e.Campaign(ctx, "scale")
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		g.campaignFailed(err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(term.Backoff(attempt, time.Second)):
		}
	}
}

// holdZKLocks holds each election with a zk.Lock, all on one connection
// whose session timeout is the TTL.
func holdZKLocks(tb testing.TB, ctx context.Context, g *scaleLedger, prefix string, ttl time.Duration) func() {
	conn, _, err := zk.Connect(testenv.ZKServers(tb), ttl, zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false))
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	locks := make([]*zk.Lock, g.n)
	for i := range g.n {
		name := fmt.Sprintf("%s-zklock/%s/%d", zkPrefix, prefix, i)
		locks[i] = zk.NewLock(conn, name, zk.WorldACL(zk.PermAll))
		wg.Go(func() {
			if err := locks[i].Lock(); err != nil {
				tb.Errorf("zk.Lock %s: %v", name, err)
				return
			}
			g.elected(name, 1)
		})
	}
	return func() {
		wg.Wait()
		for _, l := range locks {
			_ = l.Unlock()
		}
		conn.Close()
	}
}
