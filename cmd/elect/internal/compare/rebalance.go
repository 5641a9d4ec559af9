package compare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/leaderkit/elector/partition"
)

// PhaseRebalance is the name [Progress] gives the phase that measures
// [Join] and [Leave].
const PhaseRebalance = "rebalance"

// group is the partition group of the rebalance phase on one backend: its
// members, each on a client of its own, and who owns each partition.
type group struct {
	name    string
	n       int
	clients []*Client // Members clients, then the joiner's
	members []*member // running members

	mu      sync.Mutex
	owner   []string      // partition -> identity whose OnAssigned runs, "" for none
	changed chan struct{} // receives a value (capacity 1) after each change
}

// member is one running partition.Assigner.
type member struct {
	id     string
	cancel context.CancelFunc
	done   chan error // Run's result
}

// groupName returns the group's name and records on b every election its
// members can campaign for, for the cleanup.
func (r *runner) groupName(b *bstate) string {
	g := r.name("rebalance")
	b.record(g)
	for p := range r.o.Partitions {
		b.record(r.name(partition.Election("rebalance", p)))
	}
	for k := range r.maxMembers() {
		b.record(r.name("rebalance/m/" + strconv.Itoa(k))) // the membership slots, as package partition names them
	}
	return g
}

// maxMembers is the partition.Options.MaxMembers of the group: the members,
// the joiner and a spare slot.
func (r *runner) maxMembers() int { return r.o.Members + 2 }

// startGroup opens the clients and starts Members members of the group.
func (r *runner) startGroup(ctx context.Context, b *bstate) {
	g := &group{name: r.groupName(b), n: r.o.Partitions, owner: make([]string, r.o.Partitions), changed: make(chan struct{}, 1)}
	b.group = g
	for range r.o.Members + 1 {
		c, err := b.t.Open(ctx)
		if err != nil {
			r.rebalanceFailed(ctx, b, fmt.Errorf("open: %w", err))
			return
		}
		b.addClient(c)
		g.clients = append(g.clients, c)
	}
	for i := range r.o.Members {
		if err := r.startMember(ctx, b, g.clients[i], "member-"+strconv.Itoa(i)); err != nil {
			r.rebalanceFailed(ctx, b, err)
			return
		}
	}
	if _, err := r.waitPlaced(ctx, g); err != nil {
		r.rebalanceFailed(ctx, b, fmt.Errorf("the first %d members: %w", r.o.Members, err))
	}
}

// rebalanceFailed records err on both rebalance workloads and stops the
// group: its trials are then skipped.
func (r *runner) rebalanceFailed(ctx context.Context, b *bstate, err error) {
	failed(ctx, b.result(Join), err)
	failed(ctx, b.result(Leave), err)
	r.stopGroup(ctx, b)
}

// startMember starts a member with identity id on c.
func (r *runner) startMember(ctx context.Context, b *bstate, c *Client, id string) error {
	g := b.group
	a, err := partition.New(c.Backend, g.name, g.n, &partition.Options{
		Identity: id, TTL: r.o.TTL, MaxMembers: r.maxMembers(), Logger: slog.New(slog.DiscardHandler),
		OnAssigned: func(ctx context.Context, as partition.Assignment) {
			g.set(as.Partition, "", id)
			<-ctx.Done()
			g.set(as.Partition, id, "")
		},
	})
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(ctx)
	m := &member{id: id, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- a.Run(mctx) }()
	g.members = append(g.members, m)
	return nil
}

// set records that partition p is owned by to, if it was owned by from
// ("" for anyone).
func (g *group) set(p int, from, to string) {
	g.mu.Lock()
	if from == "" || g.owner[p] == from {
		g.owner[p] = to
	}
	g.mu.Unlock()
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// placed reports whether every partition is owned by a running member and
// each member holds its quota (partition.Quotas): the state a join or a
// leave converges to.
func (g *group) placed() bool {
	ids := make([]string, len(g.members))
	for i, m := range g.members {
		ids[i] = m.id
	}
	slices.Sort(ids)
	load := make([]int, len(ids))
	g.mu.Lock()
	defer g.mu.Unlock()
	for p := range g.n {
		i, ok := slices.BinarySearch(ids, g.owner[p])
		if !ok {
			return false
		}
		load[i]++
	}
	return slices.Equal(load, partition.Quotas(g.name, g.n, ids))
}

// waitPlaced waits until the group is placed and returns when it was, or
// an error after a bound of ten TTLs plus ten seconds.
func (r *runner) waitPlaced(ctx context.Context, g *group) (time.Time, error) {
	t := time.NewTimer(10*r.o.TTL + 10*time.Second)
	defer t.Stop()
	for !g.placed() {
		select {
		case <-g.changed:
		case <-t.C:
			return time.Time{}, errors.New("partitions not owned as placed within 10 TTLs + 10s")
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
	return time.Now(), nil
}

// rebalance is one trial: a member joins (the time until every partition
// is owned as placed with it), then leaves gracefully (the time until they
// are owned as placed without it).
func (r *runner) rebalance(ctx context.Context, b *bstate, _ int) {
	g := b.group
	if g == nil || len(g.members) != r.o.Members {
		return // the group could not start; the error is recorded
	}
	t0 := time.Now()
	if err := r.startMember(ctx, b, g.clients[r.o.Members], "joiner"); err != nil {
		failed(ctx, b.result(Join), err)
		return
	}
	at, err := r.waitPlaced(ctx, g)
	if err != nil {
		failed(ctx, b.result(Join), err)
	} else {
		b.result(Join).add(at.Sub(t0))
	}
	j := g.members[len(g.members)-1]
	t0 = time.Now()
	j.cancel()
	g.members = g.members[:len(g.members)-1]
	at, err = r.waitPlaced(ctx, g)
	if err2 := <-j.done; !errors.Is(err2, context.Canceled) && err == nil {
		err = fmt.Errorf("the joiner's Run: %w", err2)
	}
	if err != nil {
		failed(ctx, b.result(Leave), err)
		return
	}
	b.result(Leave).add(at.Sub(t0))
}

// stopGroup stops every member (each hands its partitions over and leaves)
// and waits for them.
func (r *runner) stopGroup(_ context.Context, b *bstate) {
	if b.group == nil {
		return
	}
	for _, m := range b.group.members {
		m.cancel()
	}
	for _, m := range b.group.members {
		<-m.done
	}
	b.group.members = nil
}
