package migrate_test

import (
	"github.com/leaderkit/elector/etcd"
	"github.com/leaderkit/elector/migrate"
	"github.com/leaderkit/elector/redlock"
	"github.com/leaderkit/elector/zookeeper"
)

// Every driver of the module writes the marker of its own store, so that a
// migrate.Backend uses the old backend as its Marker by default.
var (
	_ migrate.Marker = (*redlock.Backend)(nil)
	_ migrate.Marker = (*etcd.Backend)(nil)
	_ migrate.Marker = (*zookeeper.Backend)(nil)
)
