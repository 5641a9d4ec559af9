package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/partition"
)

// runPartitions is the partition mode: the process is a member of group
// cfg.election sharing cfg.partitions partitions, and writes to the fence
// for each partition it owns (key p<N>, the partition's own resource). It
// leaves the group gracefully after a random cfg.memberMin..cfg.memberMax
// and joins again after a short break, so that partitions hand over
// cooperatively; it reports each ownership as an elected and a stepdown
// event keyed by the partition, then a revoked event saying why it ended.
func runPartitions(ctx context.Context, b backend.Backend, hc *http.Client, cfg config) error {
	for gen := 0; ; gen++ {
		member, cancel := context.WithTimeout(ctx, cfg.memberMin+rand.N(cfg.memberMax-cfg.memberMin+1))
		a, err := partition.New(b, cfg.election, cfg.partitions, &partition.Options{
			Identity: fmt.Sprintf("%s-%d", cfg.proc, gen),
			TTL:      cfg.ttl,
			Logger:   logger(),
			OnAssigned: func(ctx context.Context, as partition.Assignment) {
				key := "p" + strconv.Itoa(as.Partition)
				emit(event{Mono: mono(), Proc: cfg.proc, Kind: "elected", Token: as.Token, Key: key})
				own(ctx, hc, cfg, key, as.Token)
				emit(event{Mono: mono(), Proc: cfg.proc, Kind: "stepdown", Token: as.Token, Key: key, Note: "ctx done"})
			},
			OnRevoked: func(as partition.Assignment, reason error) {
				why := "lost: " + reason.Error()
				switch {
				case errors.Is(reason, partition.ErrMoved):
					why = "moved"
				case errors.Is(reason, context.DeadlineExceeded) || errors.Is(reason, context.Canceled):
					why = "leaving"
				}
				emit(event{Mono: mono(), Proc: cfg.proc, Kind: "revoked", Token: as.Token, Key: "p" + strconv.Itoa(as.Partition), Note: why})
			},
		})
		if err != nil {
			cancel()
			return err
		}
		err = a.Run(member)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case !errors.Is(err, context.DeadlineExceeded):
			return err
		}
		select { // a break before joining again
		case <-time.After(cfg.ttl/2 + rand.N(cfg.ttl/2)):
		case <-ctx.Done():
			return nil
		}
	}
}

// own writes to the fence for partition key at once, presenting the new
// token to the resource before acting, then every cfg.writeEvery until ctx
// ends, each write going out cfg.writeEvery/2 after the check, as lead's.
// Without the first write a partition's resource learns the new token only
// writeEvery/2 into the term (250 ms at TTL 2 s), and a paused ex-owner
// resumed meanwhile has its late write accepted (etcd-partitions seed 23,
// pause-leader): a fence refuses a stale token only once it has seen a newer
// one.
func own(ctx context.Context, hc *http.Client, cfg config, key string, token uint64) {
	write(hc, cfg.fence, cfg.proc, key, token)
	tick := time.NewTicker(cfg.writeEvery)
	defer tick.Stop()
	for ctx.Err() == nil {
		time.Sleep(cfg.writeEvery / 2)
		write(hc, cfg.fence, cfg.proc, key, token)
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}
