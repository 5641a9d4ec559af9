package integration_test

// Rolling migrations on the real servers: five replicas restarted one at a
// time from Redis (unmodified redlock electors) through PhaseBoth, PhaseNew
// and PhaseDone of package migrate, leaders resigning every 300 ms, with a
// late unmodified Redis replica and a late PhaseOld replica started after
// the marker. Run with the test servers up:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -race -run 'TestMigrate' -v .

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/etcd"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/migrate"
	"github.com/leaderkit/elector/redlock"
	"github.com/leaderkit/elector/zookeeper"
)

func TestMigrateRedisToEtcd(t *testing.T) {
	cli := etcdClient(t, etcdEndpoints(t)...)
	newSide := func(tb testing.TB) backend.Backend {
		b, err := etcd.New(cli, nil)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	runRedisMigration(t, newSide, "etcd")
}

func TestMigrateRedisToZooKeeper(t *testing.T) {
	servers := testenv.ZKServers(t)
	newSide := func(tb testing.TB) backend.Backend {
		b, err := zookeeper.New(servers, &zookeeper.Options{Root: zkRoot})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	runRedisMigration(t, newSide, "zookeeper")
}

// runRedisMigration rolls a migration from Redis to newSide and checks the
// history, the late replicas, and the cleanup.
func runRedisMigration(t *testing.T, newSide side, newName string) {
	oldSide, marker := redisSide(t)
	m := &migration{tb: t, election: migrateName("redis-" + newName), old: oldSide, new: newSide,
		marker: marker, newName: newName, fence: &fenceLog{tb: t}, log: testLogger(t)}
	lateErr := m.roll(time.Second)
	m.checkTerms()
	if !errors.Is(lateErr, backend.ErrInvalid) || !strings.Contains(lateErr.Error(), "step 3") {
		t.Errorf("late PhaseOld replica: got Run error %v; want ErrInvalid naming runbook step 3", lateErr)
	}

	rb, err := redlock.New(redlockClients(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	ctx := redlockCtx(t)
	if h, err := rb.Leader(ctx, m.election); err != nil || h.Identity != migrate.MarkerPrefix+newName {
		t.Errorf("Redis holder after the migration: got %+v, %v; want the marker", h, err)
	}
	if err := migrate.Cleanup(ctx, marker, m.election); err != nil {
		t.Fatal(err)
	}
	if h, err := rb.Leader(ctx, m.election); !errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("Redis holder after Cleanup: got %+v, %v; want none", h, err)
	}
}
