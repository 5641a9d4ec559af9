// Package redismark writes the "migrated" marker of package migrate into
// the Redis masters of a redlock backend, for migrations away from Redis.
//
// The marker is the election's own lock key made persistent: on every node,
// the key KeyPrefix+election that held the marking candidate's lease is
// rewritten, without expiry, to a value in the redlock driver's format
// ("<lease id> <token> <identity>", see the redlock package documentation),
// with the fixed lease id [MarkerID], the lease's token, and the identity
// "migrated-to-<new>". A redlock candidate finds the key taken on every node
// and waits behind it for good, and so does a redsync or node-redlock client
// locking the same key; the redlock driver's Leader reports the marker as
// the holder.
//
// The marker lasts as long as the nodes keep their data: a node that
// restarts empty (no AOF) loses it, and once a majority have, a replica
// configured for Redis alone can win again. Run the nodes with appendonly
// yes for the whole migration, as the redlock driver's own fencing already
// requires.
package redismark

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/migrate"
)

// MarkerID is the lease id in the marker's value: the 16 bytes
// "elector-migrated" in hex, then ".0" (the redlock driver's lease id is 32
// hex digits, ".", and an attempt number).
const MarkerID = "656c6563746f722d6d69677261746564.0"

// counterSuffix is the redlock driver's fencing counter key suffix.
const counterSuffix = "//token"

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

// unmarkScript deletes the lock key if it holds a marker, and the counter.
//
// ARGV: marker id prefix.
var unmarkScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
redis.call('DEL', KEYS[2])
return 1
`)

// Marker implements [migrate.Marker] on the Redis masters of a redlock
// backend. Create it with [New].
type Marker struct {
	clients []redis.UniversalClient
	prefix  string
	timeout time.Duration
}

var _ migrate.Marker = (*Marker)(nil)

// New returns a Marker over clients, the same masters (in any order) the
// redlock backend uses, whose lock keys are keyPrefix+election: pass the
// backend's Options.KeyPrefix, redlock.DefaultKeyPrefix ("elector:") when
// that was empty, or "" when it set NoKeyPrefix. Each node's request is
// bounded by timeout (0 means 1 s).
//
// New does not take ownership of the clients: close them yourself.
func New(clients []redis.UniversalClient, keyPrefix string, timeout time.Duration) (*Marker, error) {
	switch {
	case len(clients) == 0:
		return nil, fmt.Errorf("redismark: %w: no clients; want the redlock backend's masters", backend.ErrInvalid)
	case timeout < 0:
		return nil, fmt.Errorf("redismark: %w: timeout is %v; want 0 (1 s) or more", backend.ErrInvalid, timeout)
	case timeout == 0:
		timeout = time.Second
	}
	return &Marker{clients: clients, prefix: keyPrefix, timeout: timeout}, nil
}

// Mark makes the lock key of election persistent with the marker on every
// node that held's lease holds or that has no key, keeping held's token. It
// succeeds once a majority of the nodes carry the marker, so that no
// redlock quorum can form again. When it fails, the nodes it reached keep
// the marker (the next Mark completes it, or Unmark removes it); they count
// as down for the redlock backend meanwhile.
func (m *Marker) Mark(ctx context.Context, election string, held backend.Lease, identity string) error {
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("redismark: %w", err)
	}
	if !time.Now().Before(held.Deadline()) {
		return fmt.Errorf("redismark: mark %q: %w: the lease's deadline has passed", election, backend.ErrLost)
	}
	token := strconv.FormatUint(held.Token(), 10)
	value := MarkerID + " " + token + " " + identity
	key := m.prefix + election
	oks, errs := m.each(ctx, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		n, err := markScript.Run(ctx, c, []string{key}, token, value, MarkerID+" ").Int()
		return n == 1, err
	})
	if q := len(m.clients)/2 + 1; oks < q {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("redismark: mark %q: %d of %d nodes carry the marker; want %d: %w", election, oks, len(m.clients), q, errors.Join(errs...))
	}
	return nil
}

// Unmark deletes the marker and the fencing counter of election on every
// node. It fails unless every node answered, so that no marker fragment is
// left to slow later elections; call it again then.
func (m *Marker) Unmark(ctx context.Context, election string) error {
	key := m.prefix + election
	oks, errs := m.each(ctx, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		err := unmarkScript.Run(ctx, c, []string{key, key + counterSuffix}, MarkerID+" ").Err()
		return err == nil, err
	})
	if oks < len(m.clients) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("redismark: unmark %q: %d of %d nodes answered: %w", election, oks, len(m.clients), errors.Join(errs...))
	}
	return nil
}

// each runs f on every node in parallel, each call bounded by the timeout,
// and counts the nodes where it returned true.
func (m *Marker) each(ctx context.Context, f func(context.Context, redis.UniversalClient) (bool, error)) (int, []error) {
	oks := make([]bool, len(m.clients))
	errs := make([]error, len(m.clients))
	var wg sync.WaitGroup
	for i, c := range m.clients {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, m.timeout)
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
