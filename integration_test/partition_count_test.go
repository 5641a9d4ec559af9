package integration_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/partition"
)

// BenchmarkPartitionsColdStart measures the cold start of
// BenchmarkPartitions alone — 10 members started together to all 1,024
// partitions owned as placed, default TTL — and counts the members' backend
// calls by kind meanwhile, per member:
//
//	go test -run '^$' -bench BenchmarkPartitionsColdStart -benchtime=3x -timeout 30m .
//
// It reports cold-start-s, and per member campaigns/member (Campaign calls),
// campaign-errs/member, slot-reads/member (Leader on membership slots),
// holder-reads/member (Leader on partitions), renews/member,
// renew-errs/member and releases/member.
func BenchmarkPartitionsColdStart(b *testing.B) {
	for _, s := range partStores()[1:] {
		b.Run(s.name, func(b *testing.B) {
			var total partCounts
			var took time.Duration
			for b.Loop() {
				var c partCounts
				b.Cleanup(func() { b.Logf("counts of one cold start (all members): %s", c.String()) })
				took += coldStart(b, countedStore(s, &c))
				total.add(&c)
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "cold-start-s")
			total.report(b, float64(b.N*10))
		})
	}
}

// coldStart starts 10 members of a fresh group of 1,024 partitions, waits
// until they own every partition as placed, stops them and returns how long
// the start took.
func coldStart(b *testing.B, s partStore) time.Duration {
	const (
		n       = 1024
		members = 10
	)
	if s.name == "redlock" {
		awaitRedisUptime(b, partition.DefaultTTL) // see benchPartitions
	}
	group := partGroup("cold-" + s.name)
	g := newPartLedger(b)
	var ms []*partMember
	began := time.Now()
	for i := range members {
		ms = append(ms, startPartMember(b, s, group, n, g.options(fmt.Sprintf("member-%02d", i), partition.DefaultTTL)))
	}
	settleBalanced(b, g, group, n, ms, 2*time.Minute)
	took := time.Since(began)
	for _, m := range ms {
		_ = m.stop()
	}
	return took
}

// partCounts counts the backend calls of partition members by kind.
type partCounts struct {
	campaigns, campaignErrs     atomic.Int64
	slotReads, holderReads      atomic.Int64
	renews, renewErrs, releases atomic.Int64
}

func (c *partCounts) add(o *partCounts) {
	for i, v := range o.values() {
		c.values()[i].Add(v.Load())
	}
}

func (c *partCounts) values() []*atomic.Int64 {
	return []*atomic.Int64{&c.campaigns, &c.campaignErrs, &c.slotReads, &c.holderReads, &c.renews, &c.renewErrs, &c.releases}
}

func (c *partCounts) String() string {
	var out []string
	for i, v := range c.values() {
		out = append(out, fmt.Sprintf("%s %d", partCountNames[i], v.Load()))
	}
	return strings.Join(out, ", ")
}

var partCountNames = []string{"campaigns", "campaign-errs", "slot-reads", "holder-reads", "renews", "renew-errs", "releases"}

func (c *partCounts) report(b *testing.B, per float64) {
	for i, v := range c.values() {
		b.ReportMetric(float64(v.Load())/per, partCountNames[i]+"/member")
	}
}

// countedStore returns s with every member's Backend counting its calls
// into c.
func countedStore(s partStore, c *partCounts) partStore {
	mk := s.make
	s.make = func(tb testing.TB) (backend.Backend, func()) {
		b, crash := mk(tb)
		return &countingBackend{Backend: b, c: c}, crash
	}
	return s
}

// countingBackend passes every call to its Backend, counting it.
type countingBackend struct {
	backend.Backend
	c *partCounts
}

func (b *countingBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	b.c.campaigns.Add(1)
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		if ctx.Err() == nil {
			b.c.campaignErrs.Add(1)
		}
		return nil, err
	}
	return &countingLease{Lease: l, c: b.c}, nil
}

func (b *countingBackend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if strings.Contains(election, "/m/") {
		b.c.slotReads.Add(1)
	} else {
		b.c.holderReads.Add(1)
	}
	return b.Backend.Leader(ctx, election)
}

// countingLease passes every call to its Lease, counting renewals and
// releases.
type countingLease struct {
	backend.Lease
	c *partCounts
}

func (l *countingLease) Renew(ctx context.Context) error {
	l.c.renews.Add(1)
	err := l.Lease.Renew(ctx)
	if err != nil {
		l.c.renewErrs.Add(1)
	}
	return err
}

// DeadlineTrails forwards backend.TrailingLease, so that a ZooKeeper
// lease counted here is renewed as it is uncounted.
func (l *countingLease) DeadlineTrails() bool {
	t, ok := l.Lease.(backend.TrailingLease)
	return ok && t.DeadlineTrails()
}

func (l *countingLease) Release(ctx context.Context) error {
	l.c.releases.Add(1)
	return l.Lease.Release(ctx)
}
