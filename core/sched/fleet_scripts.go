package sched

import "github.com/redis/go-redis/v9"

// The scripts take the caller's clock (ARGV now, in ms), as core/quota's
// do; replica clocks are assumed to agree within a few milliseconds (NTP).
// Every key of one backend carries the hash tag {backend}, so they also
// run on Redis Cluster.

// claimScript is the one change to a backend's slot pool: it gives back
// the slots a replica offers, grants it up to want slots (keeping offered
// ones first) while the pool stays within max_concurrent and no other
// replica bids a lower fair-share key for them, and records or withdraws
// the replica's bid.
//
// KEYS: 1 slots (zset: member "replica:seq", score = lease expiry ms),
// 2 bids (zset: replica -> fair-share key of its best waiter),
// 3 bid expiries (zset: replica -> expiry ms), 4 heartbeats and
// 5 heartbeat clock (beatLua).
// ARGV: 1 now, 2 max_concurrent, 3 slot expiry, 4 replica, 5 want,
// 6 key, 7 bid expiry, 8 channel, 9 "slot freed" message, 10 "demand"
// message, 11 number of offered members, 12 dead-after ms, 13 gap ms,
// 14… the offered members, then new members (want − offered of them,
// when want is larger).
// Returns {slots granted (the first of ARGV 14…), bids of other replicas}.
// The claim beats the caller's heartbeat and sweeps dead replicas'
// slots first (beatLua), so a waiting replica's next claim finds them.
//
// A grant of n needs free − better ≥ n, where free is max_concurrent less
// the live slots (offered ones given back first) and better the bids with
// a key strictly lower than the caller's: a freed slot goes to the lowest
// bid fleet-wide. A caller granted less than it wants leaves its bid (with
// an expiry: a dead replica's bid lapses) and publishes its demand, so
// replicas keeping idle slots give them back. Whenever slots stay free
// after the grant while others bid (offered ones it did not keep, or ones
// it was not granted because a lower bid waits), they are announced as
// freed: a slot set aside for a better bidder must wake it, or it stays
// idle until that bidder's next safety tick (with 2 ms requests that
// wait handed its share to the replica claiming most often).
var claimScript = redis.NewScript(beatLua + `
local now = tonumber(ARGV[1])
beat(KEYS[1], KEYS[4], KEYS[5], now, ARGV[4], tonumber(ARGV[12]), tonumber(ARGV[13]))
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, r in ipairs(gone) do redis.call('ZREM', KEYS[2], r) end
if #gone > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) end
redis.call('ZREM', KEYS[2], ARGV[4])
local nOffer = tonumber(ARGV[11])
for i = 1, nOffer do redis.call('ZREM', KEYS[1], ARGV[13 + i]) end
local want = tonumber(ARGV[5])
local n = 0
local free = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1])
if want > 0 then
  local better = redis.call('ZCOUNT', KEYS[2], '-inf', '(' .. ARGV[6])
  n = math.min(want, free - better)
  if n < 0 then n = 0 end
  for i = 1, n do redis.call('ZADD', KEYS[1], ARGV[3], ARGV[13 + i]) end
end
local others = redis.call('ZCARD', KEYS[2])
if n < want then
  redis.call('ZADD', KEYS[2], ARGV[6], ARGV[4])
  redis.call('ZADD', KEYS[3], ARGV[7], ARGV[4])
  redis.call('PUBLISH', ARGV[8], ARGV[10])
else
  redis.call('ZREM', KEYS[3], ARGV[4])
end
if free > n and others > 0 then redis.call('PUBLISH', ARGV[8], ARGV[9]) end
return {n, others}
`)

// renewScript beats a replica's heartbeat (beatLua, which sweeps dead
// replicas' slots) and extends its slot leases. A member that expired or
// was swept (the replica stalled longer than a lease or than dead-after,
// or Redis restarted and lost it) is added back while the pool has room;
// the members returned are lost: the replica uses more slots than it
// holds until that many are released.
//
// KEYS: 1 slots, 2 heartbeats, 3 heartbeat clock. ARGV: 1 now, 2 new
// expiry, 3 max_concurrent, 4 replica, 5 dead-after ms, 6 gap ms, 7…
// members.
var renewScript = redis.NewScript(beatLua + `
local now = tonumber(ARGV[1])
beat(KEYS[1], KEYS[2], KEYS[3], now, ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]))
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local max = tonumber(ARGV[3])
local lost = {}
for i = 7, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) or redis.call('ZCARD', KEYS[1]) < max then
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
`)

// beatLua defines beat(slots, alive, clock, now, replica, deadAfter, gap),
// which both slot scripts run first: it records the caller's heartbeat on
// this backend (alive: zset replica -> last beat ms) and removes the slot
// leases of every replica whose last beat is older than deadAfter (about
// two heartbeats; FleetOptions.Heartbeat): a replica that died gives its
// slots back then, not when their leases (scheduler.slot_lease) run out.
//
// A beat missing says the replica is dead only if the others could beat
// meanwhile. clock (hash: last = the latest beat by anyone, since = when
// beats last resumed after a gap) tells: when no beat at all came for
// gap (more than a heartbeat: Redis was stalled or restarted, or every
// replica was), since restarts, and nobody is swept until beats have run
// uninterrupted for deadAfter, by which time every live replica has beaten
// again. gap + a heartbeat ≤ deadAfter keeps a live replica that beat
// just before a stall shorter than gap from being swept at its end.
const beatLua = `
local function beat(kSlots, kAlive, kClock, now, me, deadAfter, gap)
  local last = tonumber(redis.call('HGET', kClock, 'last') or '0')
  local since = tonumber(redis.call('HGET', kClock, 'since') or '0')
  if now - last > gap then
    since = now
    redis.call('HSET', kClock, 'since', now)
  end
  if now > last then redis.call('HSET', kClock, 'last', now) end
  redis.call('ZADD', kAlive, now, me)
  redis.call('PEXPIRE', kAlive, 10 * deadAfter + 60000)
  redis.call('PEXPIRE', kClock, 10 * deadAfter + 60000)
  if now - since < deadAfter then return end
  local dead = redis.call('ZRANGEBYSCORE', kAlive, '-inf', '(' .. (now - deadAfter))
  if #dead == 0 then return end
  local gone = {}
  for _, r in ipairs(dead) do gone[r] = true end
  for _, m in ipairs(redis.call('ZRANGE', kSlots, 0, -1)) do
    local r = string.match(m, '^(.*):%d+$')
    if r and gone[r] then redis.call('ZREM', kSlots, m) end
  end
  redis.call('ZREM', kAlive, unpack(dead))
end
`

// serviceScript adds each user's recent service (estimated tokens) to the
// fleet's decayed counter and returns every counter asked for, decayed to
// now. A counter v last written at t is worth v·2^(−(now − t)/half-life).
//
// KEYS: 1 values (hash user -> v), 2 times (hash user -> t ms).
// ARGV: 1 now, 2 half-life ms, 3 key expiry ms, then user, amount pairs
// (amount 0: only read). Returns the values as strings (Lua numbers
// would be truncated to integers).
var serviceScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local hl = tonumber(ARGV[2])
local out = {}
local wrote = false
for i = 4, #ARGV, 2 do
  local u = ARGV[i]
  local add = tonumber(ARGV[i + 1])
  local v = tonumber(redis.call('HGET', KEYS[1], u) or '0')
  local t = tonumber(redis.call('HGET', KEYS[2], u) or ARGV[1])
  if now > t then v = v * math.pow(2, -(now - t) / hl) end
  if add ~= 0 then
    v = v + add
    redis.call('HSET', KEYS[1], u, tostring(v))
    redis.call('HSET', KEYS[2], u, math.max(now, t))
    wrote = true
  end
  out[#out + 1] = tostring(v)
end
if wrote then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
return out
`)
