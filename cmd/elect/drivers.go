package main

// elect speaks every scheme: each driver registers its own with
// backendurl.DefaultMux when imported.
import (
	_ "github.com/leaderkit/elector/etcd"      // etcd://, etcds://
	_ "github.com/leaderkit/elector/kube"      // kube://
	_ "github.com/leaderkit/elector/migrate"   // migrate+<phase>://
	_ "github.com/leaderkit/elector/redlock"   // redis://, rediss://
	_ "github.com/leaderkit/elector/zookeeper" // zk://, zks://
)
