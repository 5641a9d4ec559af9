package integration_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/migratetest"
	"github.com/leaderkit/elector/redlock"
)

// migrateTTL is the lease TTL of the migration tests: etcd grants whole
// seconds and the test ZooKeeper ensemble sessions of 1 s to 30 s.
const migrateTTL = 2 * time.Second

// migrateName returns an election name unique to this run.
func migrateName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "migrate-it/" + prefix + "-" + hex.EncodeToString(b[:])
}

// side makes the backends of one store for one replica.
type side = migratetest.Side

// redisSide is a store of the tests: redlock on the five masters, default
// key prefix.
func redisSide(tb testing.TB) side {
	clients := redlockClients(tb)
	return func(tb testing.TB) backend.Backend {
		// The machine running the tests may be loaded: give each node
		// more than the default 100 ms, still well below the TTL.
		b, err := redlock.New(clients, &redlock.Options{RequestTimeout: 500 * time.Millisecond})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
}
