package redlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/orphans"
)

// registrySuffix is appended to a lock key to name the election's registry
// of candidates: a sorted set of "<entry id> <version> <entry>" members
// (<entry> "-" for a withdrawn one) scored by their expiry, in ms on the
// node's clock. No valid election name
// contains "//", so it is no other election's key; redsync and node-redlock
// never read it. Writes are announced on the pub/sub channel of the same
// name.
const registrySuffix = "//candidates"

// registryKey returns the registry key of an election.
func (b *Backend) registryKey(election string) string { return b.lockKey(election) + registrySuffix }

// writeEntryScript adds or updates the member of entry ARGV[1] with version
// ARGV[2] and value ARGV[3], expiring ARGV[4] ms from now on the node's
// clock, unless it holds a higher version already (then only its expiry
// moves). With ARGV[5] = "update" a missing entry is not created: the reply
// is -1. Members past their expiry are dropped first. The key lives as long
// as its longest-lived member. The write is announced on KEYS[1].
var writeEntryScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local p = ARGV[1] .. ' '
local found
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(m, 1, #p) == p then found = m end
end
local gone = found and string.match(found, '^%S+ %d+ %-$')
if (not found or gone) and ARGV[5] == 'update' then return -1 end
local member = p .. ARGV[2] .. ' ' .. ARGV[3]
if found then
  local v = tonumber(string.match(found, '^%S+ (%d+) '))
  if v and v > tonumber(ARGV[2]) then member = found end
  redis.call('ZREM', KEYS[1], found)
end
local ttl = tonumber(ARGV[4])
redis.call('ZADD', KEYS[1], now + ttl, member)
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
redis.call('PUBLISH', KEYS[1], ARGV[1])
return 1
`)

// withdrawEntryScript replaces the member of entry ARGV[1] with its
// tombstone "<entry id> <version ARGV[2]> -", expiring ARGV[3] ms from now
// on the node's clock, and announces it. A node that missed the withdrawal
// still holds the entry at a lower version, so a quorum read, which always
// meets a tombstone, drops it; the tombstone outlives the entry it hides.
var withdrawEntryScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local p = ARGV[1] .. ' '
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(m, 1, #p) == p then redis.call('ZREM', KEYS[1], m) end
end
local ttl = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + ttl, p .. ARGV[2] .. ' -')
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
redis.call('PUBLISH', KEYS[1], ARGV[1])
return 1
`)

// listEntriesScript drops the expired members and replies {now, member,
// expiry, …}, times in ms on the node's clock.
var listEntriesScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local out = {tostring(now)}
local r = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #r do out[#out + 1] = r[i] end
return out
`)

// nodeEntries is one node's reply to listEntriesScript.
type nodeEntries struct {
	entries map[string]versioned
	next    time.Duration // until the first member expires; 0 for none
}

func (nodeEntries) status() status { return yes }

// versioned is an entry with the version of its last write; gone for a
// withdrawn one.
type versioned struct {
	backend.Entry
	version uint64
	gone    bool
}

// parseEntries parses a reply of listEntriesScript.
func parseEntries(v []any, err error) (nodeEntries, error) {
	if err != nil {
		return nodeEntries{}, err
	}
	if len(v) == 0 || len(v)%2 != 1 {
		return nodeEntries{}, fmt.Errorf("list entries: got %d values, want an odd number", len(v))
	}
	now, _ := strconv.ParseFloat(fmt.Sprint(v[0]), 64)
	out := nodeEntries{entries: make(map[string]versioned)}
	for i := 1; i+1 < len(v); i += 2 {
		m, _ := v[i].(string)
		exp, _ := strconv.ParseFloat(fmt.Sprint(v[i+1]), 64)
		f := strings.SplitN(m, " ", 3)
		if len(f) != 3 {
			continue
		}
		ver, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		v := versioned{version: ver, gone: f[2] == "-"}
		if !v.gone {
			if v.Entry, err = backend.DecodeEntry(f[2]); err != nil {
				continue
			}
		}
		v.ID = f[0]
		if old, ok := out.entries[v.ID]; !ok || ver > old.version {
			out.entries[v.ID] = v
		}
		if left := time.Duration(math.Max(exp-now, 0)) * time.Millisecond; out.next == 0 || left < out.next {
			out.next = max(left, time.Millisecond)
		}
	}
	return out, nil
}

// Register implements [backend.Registry]. The entry is a member of the
// election's registry on a quorum of the nodes, expiring c.TTL after its
// last write unless [backend.Registration.Refresh] writes it again; Close
// withdraws it. A Register that fails withdraws what it may have written;
// when no quorum confirms that withdrawal, the next Register of the same
// election and identity takes over the entry (its ID and a newer version)
// so that no reader lists the candidate twice, and Close withdraws it if
// none does. Otherwise it expires after c.TTL.
func (b *Backend) Register(ctx context.Context, c backend.Candidate, aside bool) (backend.Registration, error) {
	if err := b.check(c.Election); err != nil {
		return nil, fmt.Errorf("redlock: register: %w", err)
	}
	if err := backend.ValidateIdentity(c.Identity); err != nil {
		return nil, fmt.Errorf("redlock: register %q: %w", c.Election, err)
	}
	if c.TTL < backend.MinTTL {
		return nil, fmt.Errorf("redlock: register %q: %w: TTL is %v; want at least %v", c.Election, backend.ErrInvalid, c.TTL, backend.MinTTL)
	}
	r := b.adopt(c)
	if err := r.write(ctx, "new", aside); err != nil {
		if r.version > 0 {
			// The write was sent, and may have landed where only the reply
			// was lost, or late: the tombstone hides the entry from every
			// quorum read, as Redlock unlocks every node after a failed
			// lock. Its round is bounded by RequestTimeout; a request it
			// could not send in time leaves the entry where it landed.
			if r.withdraw(context.WithoutCancel(ctx)) != nil {
				b.orphans.Put(orphans.Key{Election: c.Election, Identity: c.Identity}, r, time.Now().Add(c.TTL))
			}
		}
		return nil, err
	}
	b.mu.Lock()
	closed := b.closed
	if !closed {
		if b.regs == nil {
			b.regs = make(map[*registration]struct{})
		}
		b.regs[r] = struct{}{}
	}
	b.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("redlock: register %q: %w", c.Election, backend.ErrClosed)
	}
	return r, nil
}

// adopt returns a registration for c: the orphan of an earlier failed
// Register of the same candidate, whose next write supersedes its entry on
// every node (a higher version of the same entry ID), or a new one.
func (b *Backend) adopt(c backend.Candidate) *registration {
	r, ok := b.orphans.Take(orphans.Key{Election: c.Election, Identity: c.Identity})
	if !ok {
		var id [8]byte
		_, _ = rand.Read(id[:])
		return &registration{b: b, c: c, id: hex.EncodeToString(id[:])}
	}
	r.mu.Lock()
	r.c, r.withdrawn = c, false
	r.mu.Unlock()
	return r
}

// Entries implements [backend.Registry]: a read of a quorum of the nodes,
// each entry as its latest write there, withdrawn if that is a tombstone.
func (b *Backend) Entries(ctx context.Context, election string) ([]backend.Entry, error) {
	list, _, err := b.entries(ctx, election)
	return list, err
}

// entries reads the registry of election on a quorum of the nodes, and
// reports when the first of its members expires (0 for none).
func (b *Backend) entries(ctx context.Context, election string) ([]backend.Entry, time.Duration, error) {
	if err := b.check(election); err != nil {
		return nil, 0, fmt.Errorf("redlock: entries: %w", err)
	}
	key := b.registryKey(election)
	r := startRound(ctx, b, nil, func(ctx context.Context, cl redis.UniversalClient, _ int) (nodeEntries, error) {
		return parseEntries(listEntriesScript.Run(ctx, cl, []string{key}).Slice())
	})
	got, t := r.collect(ctx, func(t tally) bool { return t.yes >= b.quorum })
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if t.yes < b.quorum {
		return nil, 0, fmt.Errorf("redlock: entries %q: %d of %d nodes answered, want a quorum of %d: %s", election, t.yes, t.nodes, b.quorum, t.nodeErr())
	}
	all := make(map[string]versioned)
	var next time.Duration
	for _, g := range got {
		if g == nil || g.err != nil {
			continue
		}
		for id, v := range g.val.entries {
			if old, ok := all[id]; !ok || v.version > old.version {
				all[id] = v
			}
		}
		if g.val.next > 0 && (next == 0 || g.val.next < next) {
			next = g.val.next
		}
	}
	out := make([]backend.Entry, 0, len(all))
	for _, v := range all {
		if !v.gone {
			out = append(out, v.Entry)
		}
	}
	return out, next, nil
}

// WatchEntries implements [backend.Registry]: it subscribes to the
// registry's channel on every node, then reads the registry again after
// each write announced and when its first member expires.
func (b *Backend) WatchEntries(ctx context.Context, election string, fn func([]backend.Entry)) error {
	if err := b.check(election); err != nil {
		return fmt.Errorf("redlock: watch entries: %w", err)
	}
	key := b.registryKey(election)
	wctx, cancel := context.WithCancel(ctx)
	heard := make(chan struct{}, 1)
	confirmed := make(chan bool, len(b.clients))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, cl := range b.clients {
		wg.Go(func() { listenEntries(wctx, cl, key, confirmed, heard) })
	}
	if err := b.awaitSubscribed(ctx, election, confirmed); err != nil {
		return err
	}
	for {
		list, next, err := b.entries(ctx, election)
		if err != nil {
			return err
		}
		fn(list)
		if err := b.awaitEntries(ctx, election, heard, next); err != nil {
			return err
		}
	}
}

// listenEntries subscribes to channel on cl, reports on confirmed whether
// the node confirmed, then signals heard for each message, until ctx ends.
func listenEntries(ctx context.Context, cl redis.UniversalClient, channel string, confirmed chan<- bool, heard chan<- struct{}) {
	ps := cl.Subscribe(ctx, channel)
	defer ps.Close()
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() }) // go-redis may not end a read on ctx
	defer stop()
	if _, err := ps.Receive(ctx); err != nil {
		confirmed <- false
		return
	}
	confirmed <- true
	for {
		if _, err := ps.ReceiveMessage(ctx); err != nil {
			return
		}
		select {
		case heard <- struct{}{}:
		default:
		}
	}
}

// awaitSubscribed waits until one node has confirmed the subscription of a
// WatchEntries: one is enough to hear every write, which each node
// announces. It fails when every node refused, or none confirmed within
// twice RequestTimeout.
func (b *Backend) awaitSubscribed(ctx context.Context, election string, confirmed <-chan bool) error {
	t := time.NewTimer(2 * b.cfg.requestTimeout)
	defer t.Stop()
	for range b.clients {
		select {
		case ok := <-confirmed:
			if ok {
				return nil
			}
		case <-t.C:
			return fmt.Errorf("redlock: watch entries %q: no node confirmed the subscription within %v", election, 2*b.cfg.requestTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("redlock: watch entries %q: no node accepted the subscription", election)
}

// awaitEntries waits until a write is heard of, or next passes (never,
// when it is 0).
func (b *Backend) awaitEntries(ctx context.Context, election string, heard <-chan struct{}, next time.Duration) error {
	var expiry <-chan time.Time
	if next > 0 {
		t := time.NewTimer(next)
		defer t.Stop()
		expiry = t.C
	}
	select {
	case <-heard:
	case <-expiry:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.done:
		return fmt.Errorf("redlock: watch entries %q: %w", election, backend.ErrClosed)
	}
	return nil
}

// registration implements [backend.Registration].
type registration struct {
	b  *Backend
	c  backend.Candidate
	id string

	mu        sync.Mutex // serialises writes
	version   uint64
	aside     bool
	withdrawn bool
}

func (r *registration) ID() string { return r.id }

// write writes the entry on every node, mode "new" or "update", and waits
// for a quorum.
func (r *registration) write(ctx context.Context, mode string, aside bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, c := r.b, r.c
	if err := b.check(c.Election); err != nil {
		return fmt.Errorf("redlock: register: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.withdrawn {
		return fmt.Errorf("redlock: entry %s of %q: withdrawn: %w", r.id, c.Election, backend.ErrLost)
	}
	r.version++
	args := []any{r.id, r.version, backend.EncodeEntry(backend.Entry{Identity: c.Identity, Priority: c.Priority, Aside: aside}), c.TTL.Milliseconds(), mode}
	key := b.registryKey(c.Election)
	n := len(b.clients)
	rd := startRound(ctx, b, nil, func(ctx context.Context, cl redis.UniversalClient, _ int) (answer, error) {
		return answerOf(writeEntryScript.Run(ctx, cl, []string{key}, args...).Int64())
	})
	_, t := rd.collect(ctx, func(t tally) bool { return t.yes >= b.quorum || t.missing > n-b.quorum })
	switch {
	case t.yes >= b.quorum:
		r.aside = aside
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case t.missing > n-b.quorum:
		return fmt.Errorf("redlock: entry %s of %q: gone on %d of %d nodes: %w", r.id, c.Election, t.missing, n, backend.ErrLost)
	}
	return fmt.Errorf("redlock: register %q: %d of %d nodes wrote the entry, want a quorum of %d: %s", c.Election, t.yes, n, b.quorum, t.nodeErr())
}

func (r *registration) SetAside(ctx context.Context, aside bool) error {
	return r.write(ctx, "update", aside)
}

func (r *registration) Refresh(ctx context.Context) error {
	r.mu.Lock()
	aside := r.aside
	r.mu.Unlock()
	return r.write(ctx, "update", aside)
}

func (r *registration) Withdraw(ctx context.Context) error {
	b := r.b
	b.mu.Lock()
	delete(b.regs, r)
	b.mu.Unlock()
	return r.withdraw(ctx)
}

// withdraw replaces the entry with its tombstone on every node, waiting for
// a quorum. The registration writes nothing after it.
func (r *registration) withdraw(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	r.withdrawn = true
	r.version++
	args := []any{r.id, r.version, r.c.TTL.Milliseconds()}
	r.mu.Unlock()
	b := r.b
	key := b.registryKey(r.c.Election)
	rd := startRound(ctx, b, nil, func(ctx context.Context, cl redis.UniversalClient, _ int) (answer, error) {
		return answerOf(withdrawEntryScript.Run(ctx, cl, []string{key}, args...).Int64())
	})
	_, t := rd.collect(ctx, func(t tally) bool { return t.yes >= b.quorum })
	if t.yes >= b.quorum {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("redlock: withdraw entry %s of %q: %d of %d nodes answered, want a quorum of %d (it expires after its TTL): %s", r.id, r.c.Election, t.yes, t.nodes, b.quorum, t.nodeErr())
}

// withdrawAll withdraws every registration and orphan, for Close.
func (b *Backend) withdrawAll() {
	b.mu.Lock()
	regs := b.regs
	b.regs = nil
	b.mu.Unlock()
	if regs == nil {
		regs = make(map[*registration]struct{})
	}
	for _, r := range b.orphans.Close() {
		regs[r] = struct{}{}
	}
	var wg sync.WaitGroup
	for r := range regs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.requestTimeout)
			defer cancel()
			_ = r.withdraw(ctx)
		})
	}
	wg.Wait()
}

var _ backend.Registry = (*Backend)(nil)
