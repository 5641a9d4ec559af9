package etcd_test

import (
	"context"
	"log"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/etcd"
)

// An elector on etcd whose leader writes to etcd only while its term is
// current: the guard makes a stale leader's transaction fail instead of
// overwriting its successor's work. (Not run: it needs an etcd server.)
func ExampleBackend_Guard() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	b, err := etcd.New(cli, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	e, err := elector.New(b, "send-invoices", &elector.Options{
		TTL: 5 * time.Second,
		OnElected: func(ctx context.Context, t elector.Term) {
			guard, err := b.Guard(t.Election, t.Token)
			if err != nil {
				return // the term is already over
			}
			resp, err := cli.Txn(ctx).If(guard).Then(
				clientv3.OpPut("invoices/last-run-token", strconv.FormatUint(t.Token, 10)),
			).Commit()
			if err == nil && !resp.Succeeded {
				log.Printf("term %v ended before the write; nothing written", t)
			}
			<-ctx.Done()
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = e.Run(ctx)
}
