package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
)

// MarkerID is the lease id in the value of a "migrated" marker written by
// [Backend.Mark]: the 16 bytes "elector-migrated" in hex, then ".0" (a
// lease id is 32 hex digits, ".", and an attempt number).
const MarkerID = "656c6563746f722d6d69677261746564.0"

// markScript rewrites the lock key to the marker, without expiry, when it
// holds the lease with token ARGV[1], is missing, or already holds a marker.
// Replies 1 when the key now holds a marker, 0 when another lease holds it.
//
// ARGV: token, marker value, marker id prefix "<MarkerID> ".
var markScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[3]) == ARGV[3] then
  return 1
end
if v and string.match(v, '^%S+ (%d+) ') ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`)

// unmarkScript deletes the lock key if it holds a marker, and nothing
// else: the election's fencing counter stays, so that tokens keep rising.
// Replies 1 when it deleted the key, 0 when the key was missing or held a
// lease.
//
// ARGV: marker id prefix.
var unmarkScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// Mark writes the persistent "migrated" marker of package
// github.com/leaderkit/elector/migrate (it implements migrate.Marker, for
// migrations away from Redis): the lock key of election that held's lease
// holds is rewritten on every node, without expiry, to the value
// "<MarkerID> <held's token> <identity>". Every candidate of the election,
// and a redsync or node-redlock client locking the same key, then finds the
// key taken for good, and Leader reports identity as the holder. held must
// be a lease of election from this Backend (or another over the same
// nodes) whose deadline has not passed; identity starts with
// "migrated-to-".
//
// Mark succeeds once a majority of the nodes carry the marker, so that no
// quorum can form again; a node that held another lease's key is left as
// it is. When it fails, the nodes it reached keep the marker (the next Mark
// completes it, Unmark removes it). Marking an election that carries the
// marker succeeds. The marker lasts as long as the nodes keep their data:
// run them with appendonly yes.
func (b *Backend) Mark(ctx context.Context, election string, held backend.Lease, identity string) error {
	if err := b.check(election); err != nil {
		return fmt.Errorf("redlock: mark: %w", err)
	}
	if strings.ContainsAny(identity, " \n") || identity == "" {
		return fmt.Errorf("redlock: mark %q: %w: identity %q; want a non-empty identity without spaces", election, backend.ErrInvalid, identity)
	}
	if !time.Now().Before(held.Deadline()) {
		return fmt.Errorf("redlock: mark %q: %w: the lease's deadline has passed", election, backend.ErrLost)
	}
	token := strconv.FormatUint(held.Token(), 10)
	value := MarkerID + " " + token + " " + identity
	key := b.lockKey(election)
	oks, errs := b.eachNode(ctx, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		n, err := markScript.Run(ctx, c, []string{key}, token, value, MarkerID+" ").Int()
		return n == 1, err
	})
	if oks < b.quorum {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("redlock: mark %q: %d of %d nodes carry the marker; want %d: %w", election, oks, len(b.clients), b.quorum, errors.Join(errs...))
	}
	return nil
}

// Unmark removes the "migrated" marker of election written by
// [Backend.Mark] from every node (it implements migrate.Marker;
// migrate.Cleanup calls it): the lock key is deleted where it holds the
// marker and left alone where it holds a lease or is missing. The
// election's fencing counter is kept: deleting it would let the next
// leader's token start again from 1, at or below tokens a fence has
// already accepted. Unmark reports whether it deleted the marker on any
// node. It fails unless every node answered, so that no marker fragment is
// left to slow later elections; call it again then.
func (b *Backend) Unmark(ctx context.Context, election string) (bool, error) {
	if err := b.check(election); err != nil {
		return false, fmt.Errorf("redlock: unmark: %w", err)
	}
	key := b.lockKey(election)
	var mu sync.Mutex
	removed := false
	oks, errs := b.eachNode(ctx, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		n, err := unmarkScript.Run(ctx, c, []string{key}, MarkerID+" ").Int()
		if err == nil && n == 1 {
			mu.Lock()
			removed = true
			mu.Unlock()
		}
		return err == nil, err
	})
	if oks < len(b.clients) {
		if ctx.Err() != nil {
			return removed, ctx.Err()
		}
		return removed, fmt.Errorf("redlock: unmark %q: %d of %d nodes answered: %w", election, oks, len(b.clients), errors.Join(errs...))
	}
	return removed, nil
}

// eachNode runs f on every node in parallel, each call bounded by the node
// timeout, and counts the nodes where it returned true.
func (b *Backend) eachNode(ctx context.Context, f func(context.Context, redis.UniversalClient) (bool, error)) (int, []error) {
	oks := make([]bool, len(b.clients))
	errs := make([]error, len(b.clients))
	var wg sync.WaitGroup
	for i, c := range b.clients {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, b.cfg.requestTimeout)
			defer cancel()
			oks[i], errs[i] = f(cctx, c)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("node %d: %w", i+1, errs[i])
			}
		})
	}
	wg.Wait()
	n := 0
	for _, ok := range oks {
		if ok {
			n++
		}
	}
	return n, errs
}
