package integration_test

// Rolling migrations on the real servers: five replicas restarted one at a
// time from the old store (unmodified electors) through PhaseBoth, PhaseNew
// and PhaseDone of package migrate, leaders resigning every 300 ms, with a
// late unmodified replica and a late PhaseOld replica started once the
// marker is written, then Cleanup. Run with the test servers up:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -race -run 'TestMigrate' -v .
//
// They are not t.Parallel: at a 2 s TTL, seven replicas of up to two
// backends each, and Redis requests bounded at 500 ms, they need the host to
// themselves (run beside the other parallel tests at -parallel 8 on a loaded
// 2-core host, they took 30-44 s instead of 7, lost terms to missed
// renewals, and the Redis ones failed on RequestTimeout).

import (
	"testing"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/migratetest"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/zookeeper"
)

// etcdSide returns the etcd store of the tests.
func etcdSide(tb testing.TB) side {
	cli := etcdClient(tb, etcdEndpoints(tb)...)
	return func(tb testing.TB) backend.Backend { return etcdBackendNoCleanup(cli) }
}

// zkSide returns the ZooKeeper store of the tests.
func zkSide(tb testing.TB) side {
	servers := testenv.ZKServers(tb)
	return func(tb testing.TB) backend.Backend {
		b, err := zookeeper.New(servers, &zookeeper.Options{Prefix: zkPrefix})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
}

func TestMigrateRedisToEtcd(t *testing.T) {
	runMigration(t, redisSide(t), etcdSide(t), "etcd")
}

func TestMigrateRedisToZooKeeper(t *testing.T) {
	runMigration(t, redisSide(t), zkSide(t), "zookeeper")
}

func TestMigrateEtcdToZooKeeper(t *testing.T) {
	runMigration(t, etcdSide(t), zkSide(t), "zookeeper")
}

func TestMigrateZooKeeperToEtcd(t *testing.T) {
	runMigration(t, zkSide(t), etcdSide(t), "etcd")
}

func TestMigrateEtcdToRedis(t *testing.T) {
	runMigration(t, etcdSide(t), redisSide(t), "redis")
}

func TestMigrateZooKeeperToRedis(t *testing.T) {
	runMigration(t, zkSide(t), redisSide(t), "redis")
}

// runMigration rolls a migration from old to newSide with five replicas
// and checks the history, the late replicas, the marker as the old store
// reports it, and the cleanup (migratetest.Migration.Run).
func runMigration(t *testing.T, old, newSide side, newName string) {
	m := &migratetest.Migration{TB: t, Election: migrateName("to-" + newName), Old: old, New: newSide,
		NewName: newName, TTL: migrateTTL, Replicas: 5, Log: testLogger(t)}
	m.Run(etcdCtx(t), 3)
}
