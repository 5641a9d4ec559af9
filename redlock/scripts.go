package redlock

import "github.com/redis/go-redis/v9"

// The Lua scripts the Backend runs on every node. redis.Script.Run sends
// EVALSHA and falls back to EVAL on NOSCRIPT, so each script crosses the wire
// once per node and server restart.
//
// Conventions: KEYS[1] is the lock key, a plain string key set with PX (what
// SET key value NX PX ttl would create), so redsync and node-redlock locks of
// the same key exclude ours and ours exclude theirs. KEYS[2] is the
// election's fencing counter. ARGV[1] is the lease id prefix "<id> " that
// starts every value this Backend writes; a value belongs to a lease when it
// starts with that prefix.

// acquireScript is SET NX PX that also mints a fencing token: when the key is
// free it stores "<id> <token> <identity>", token the counter just INCRed.
// It replies {1, token} on success, or {0, pttl, value} when the key is
// held: pttl as PTTL reports it (-1 for a key without expiry), value the
// key's value ("" for a key that is not a string), whose first word (the
// lease id of a value this package wrote, the whole value of a redsync or
// node-redlock lock) tells one holder on a quorum from rivals that split
// the nodes, and whose rest names the holder for [Options.Logger].
//
// The free key is the case to make cheap: the script INCRs first and lets
// SET NX decide, two commands in all. When the key is held it DECRs the
// counter back before anything else can run (a script is atomic), so a lost
// round leaves the counter as it found it (or at the floor minus one, see
// below) and no token is spent.
//
// The counter is first raised to ARGV[4], the floor: one more than the
// highest token the calling Backend has seen for the election (0 when it
// has seen none). A node that missed the latest terms so catches up with
// the others in the same call, and the acquiring quorum's counters agree
// without a fencing write-back. Raising a counter to a token some lease
// held (or to one more) never lets a token repeat.
//
// ARGV: id prefix, identity, ttl in ms, floor.
var acquireScript = redis.NewScript(acquireSource)

const acquireSource = `
local t = redis.call('INCR', KEYS[2])
local f = tonumber(ARGV[4])
if t < f then
  t = f
  redis.call('SET', KEYS[2], ARGV[4])
end
if redis.call('SET', KEYS[1], ARGV[1] .. string.format('%d', t) .. ' ' .. ARGV[2], 'NX', 'PX', ARGV[3]) then
  return {1, t}
end
redis.call('DECR', KEYS[2])
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then v = '' end
return {0, redis.call('PTTL', KEYS[1]), v}
`

// writeBackScript writes the agreed token m back: it raises the counter to
// at least m (comparing decimal strings, exact beyond Lua's 2^53) on every
// node it reaches and, where the key still holds our lease, rewrites the
// value with token m (keeping the TTL). Replies 1 when the key is ours,
// else 0.
//
// ARGV: id prefix, m, new value.
var writeBackScript = redis.NewScript(`
local c = redis.call('GET', KEYS[2]) or '0'
local m = ARGV[2]
if #c < #m or (#c == #m and c < m) then
  redis.call('SET', KEYS[2], m)
end
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[3], 'KEEPTTL')
  return 1
end
return 0
`)

// renewScript is compare-and-pexpire. It never re-creates a missing key.
// Replies 1 when the key was ours and now expires in ttl, 0 when it holds
// another value, -1 when it is missing.
//
// ARGV: id prefix, ttl in ms.
var renewScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  return -1
end
if string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// restoreScript puts a live lease back on a node that lost its key (it
// restarted empty, or the key expired there early): SET NX PX of the lease's
// value, and the counter raised to at least the lease's token (comparing
// decimal strings) so the node's next token is higher. Renew runs it only on
// nodes that reported the key missing in a round that confirmed the quorum,
// so it never revives a lapsed lease. Replies 1 when it set the key, else 0.
//
// ARGV: value, ttl in ms, token.
var restoreScript = redis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
local c = redis.call('GET', KEYS[2]) or '0'
local m = ARGV[3]
if #c < #m or (#c == #m and c < m) then
  redis.call('SET', KEYS[2], m)
end
return 1
`)

// releaseScript is compare-and-delete plus a notification on the election's
// release channel (lock key + "//released", payload the lease id), so
// waiting candidates retry at once. Replies 1 when it deleted our key, 0 when
// the key holds another value, -1 when the key is missing.
//
// ARGV: id prefix.
var releaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  return -1
end
if string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[1] .. '//released', ARGV[1])
  return 1
end
return 0
`)

// cleanupScript is compare-and-delete without a notification: it removes
// what a failed acquire round left on a node. That key was never a term, so
// nobody is told: waking the rival candidates would only have them try
// again while the holder still holds a quorum, and two candidates waiting
// behind a crashed holder's key would wake each other round after round.
// Replies as releaseScript does.
//
// ARGV: id prefix.
var cleanupScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  return -1
end
if string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// readScript returns {pttl, value} of the lock key; value is nil when the key
// is missing.
var readScript = redis.NewScript(`
return {redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[1])}
`)
