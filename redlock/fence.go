package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrStaleToken is wrapped by the errors of a [Fence] whose caller's fencing
// token is lower than the highest the fenced resource has seen: a newer
// leader has written since, and the caller must stop acting as leader.
var ErrStaleToken = errors.New("stale fencing token")

// Fence fences writes to a resource kept in Redis (one Redis server, or a
// Cluster when every key it touches shares a hash slot with the fence key),
// as Kleppmann's fencing scheme asks: the fence key holds the highest token
// that has written, and a write carrying a lower token is refused
// atomically, in the same script that would perform it. Pass the token of
// the lease (backend.Lease.Token, or elector.Term.Token) with every write.
//
// A Fence is not a Guard. In the etcd and zookeeper drivers a Guard is a
// store-side condition that lets a write commit only while a given term is
// still current at the store. Redlock cannot offer one: its term lives on N
// independent masters, and no single store can check it atomically with a
// write. A Fence checks something weaker: that no newer term has written
// to this resource (its token is not below the highest seen).
//
// A Fence is safe for concurrent use. The client's own timeouts apply.
type Fence struct {
	client   redis.UniversalClient
	fenceKey string
}

// NewFence returns a Fence whose highest token is kept at fenceKey on
// client. Use one fence key per protected resource (or group of keys that
// must be written by one leader at a time). The client stays the caller's.
func NewFence(client redis.UniversalClient, fenceKey string) *Fence {
	return &Fence{client: client, fenceKey: fenceKey}
}

// fenceScript compares tokens as decimal strings (length, then bytes), so
// tokens above 2^53 compare exactly despite Lua's doubles. It replies
// {1, ""} after the write, or {0, highest} when the token is stale.
//
// KEYS: fence key, then the key to SET (optional). ARGV: token, value, px
// ("0" for no expiry).
var fenceScript = redis.NewScript(`
local h = redis.call('GET', KEYS[1]) or '0'
local t = ARGV[1]
if #t < #h or (#t == #h and t < h) then
  return {0, h}
end
if t ~= h then
  redis.call('SET', KEYS[1], t)
end
if #KEYS > 1 then
  if ARGV[3] ~= '0' then
    redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
  else
    redis.call('SET', KEYS[2], ARGV[2])
  end
end
return {1, ''}
`)

// Set stores value at key, with expiration when it is positive, only if
// token is at least the highest token the Fence's key has seen, and
// raises the fence to token. It returns an error wrapping [ErrStaleToken]
// when the token is stale, in which case nothing is written.
func (f *Fence) Set(ctx context.Context, token uint64, key, value string, expiration time.Duration) error {
	return f.run(ctx, token, []string{f.fenceKey, key}, value, expiration)
}

// Check raises the fence to token, or returns an error wrapping
// [ErrStaleToken] when a higher token has been seen. Use it before a write
// the Fence cannot make itself; note that such a write is then fenced only
// against leaders that called Check after it, not atomically.
func (f *Fence) Check(ctx context.Context, token uint64) error {
	return f.run(ctx, token, []string{f.fenceKey}, "", 0)
}

func (f *Fence) run(ctx context.Context, token uint64, keys []string, value string, expiration time.Duration) error {
	px := "0"
	if expiration > 0 {
		px = strconv.FormatInt(max(expiration.Milliseconds(), 1), 10)
	}
	r, err := fenceScript.Run(ctx, f.client, keys, strconv.FormatUint(token, 10), value, px).Slice()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("redlock: fence %q: %w", f.fenceKey, err)
	}
	if ok, _ := r[0].(int64); ok != 1 {
		return fmt.Errorf("redlock: fence %q: token %d is below the highest seen, %v: %w", f.fenceKey, token, r[1], ErrStaleToken)
	}
	return nil
}
