package kube

// Rolling migrations between Leases and the other stores, through package
// migrate, on the real servers: two replicas restarted one at a time from
// the old store (unmodified electors) through PhaseBoth, PhaseNew and
// PhaseDone, leaders resigning every 300 ms, a late unmodified replica and
// a late PhaseOld replica started once the marker is written, then
// migrate.Cleanup of the old store.

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/etcd"
	"github.com/leaderkit/elector/internal/migratetest"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/migrate"
	"github.com/leaderkit/elector/redlock"
)

var _ migrate.Marker = (*Backend)(nil)

// migrateTTL is the TTL of the migration tests: etcd grants whole seconds,
// and the Leases run with Options.ElectorOnly (no client-go candidate).
const migrateTTL = 2 * time.Second

// side makes the backends of one store for one replica.
type side = migratetest.Side

func kubeSide(tb testing.TB) side {
	s := testServer(tb)
	return func(tb testing.TB) backend.Backend {
		b, err := New(s.client(tb), s.ns, &Options{ElectorOnly: true})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
}

// etcdClient is a client of the etcd cluster the apiserver stores in,
// closed when tb ends.
func etcdClient(tb testing.TB) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: testenv.EtcdEndpoints(tb), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

func etcdSide(tb testing.TB) side {
	cli := etcdClient(tb)
	return func(tb testing.TB) backend.Backend {
		b, err := etcd.New(cli, nil)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
}

func redisSide(tb testing.TB) side {
	var clients []redis.UniversalClient
	for _, a := range testenv.RedisAddrs(tb) {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true})
		tb.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	return func(tb testing.TB) backend.Backend {
		// More than the default per-node timeout: the test machine may be loaded.
		b, err := redlock.New(clients, &redlock.Options{RequestTimeout: time.Second})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
}

func TestMigrateLeaseToEtcd(t *testing.T) {
	t.Parallel() // an election of its own on both stores; bounds of 30 TTLs
	runMigration(t, kubeSide(t), etcdSide(t), "etcd")
}

func TestMigrateRedisToLease(t *testing.T) {
	t.Parallel() // an election of its own on both stores; bounds of 30 TTLs
	runMigration(t, redisSide(t), kubeSide(t), "kube")
}

// runMigration rolls a migration from old to newSide with two replicas and
// checks the history (one leader at a time, tokens rising across the
// switch), the late replicas, the marker as the old store reports it, and
// the cleanup (migratetest.Migration.Run).
func runMigration(t *testing.T, old, newSide side, newName string) {
	m := &migratetest.Migration{TB: t, Election: testName(t), Old: old, New: newSide, NewName: newName,
		TTL: migrateTTL, Replicas: 2}
	m.Run(testCtx(t), 2)
}
