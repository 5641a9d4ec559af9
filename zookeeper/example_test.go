package zookeeper_test

import (
	"context"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/zookeeper"
)

// An elector over a ZooKeeper ensemble whose leader writes a znode only
// while its term is current at the ensemble: the Guard's check makes the
// multi fail once the term has ended. The ensemble's timing, stated here,
// allows TTLs from zookeeper.MinSafeTTL(500ms, 4) = 6.5s. (No output: it
// needs the servers.)
func ExampleNew() {
	b, err := zookeeper.New([]string{"zk1:2181", "zk2:2181", "zk3:2181"}, &zookeeper.Options{
		Prefix:    "/elector",
		TickTime:  500 * time.Millisecond, // zoo.cfg: tickTime=500
		SyncLimit: 4,                      // zoo.cfg: syncLimit=4
	})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close() // ends the Backend's sessions, one per TTL

	conn, _, err := zk.Connect([]string{"zk1:2181"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	e, err := elector.New(b, "send-invoices", &elector.Options{
		TTL: 10 * time.Second, // the session timeout of this election's session
		OnElected: func(ctx context.Context, t elector.Term) {
			check, err := b.Guard(t.Election, t.Token)
			if err != nil {
				return // the term is already over
			}
			_, err = conn.Multi(check, &zk.SetDataRequest{Path: "/app/last-run", Data: []byte(time.Now().String()), Version: -1})
			if err != nil {
				log.Print(err) // zk.ErrNoNode: the term ended first
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.Run(context.Background())
}
