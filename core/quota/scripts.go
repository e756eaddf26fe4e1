package quota

import "github.com/redis/go-redis/v9"

// The scripts take the caller's clock (ARGV now, in ms) rather than Redis
// TIME, so a fake clock drives them in tests; see the package doc for the
// clock-skew assumption. Every key of one user carries the hash tag {uid},
// so the scripts also run on Redis Cluster.

// admitScript leases RPM permits and concurrency slots in one round trip.
//
// KEYS: 1 rpm log (zset: member "replica:seq:n", score = grant time ms),
// 2 slot holdings (hash: replica -> slots, replica..":e" -> expiry ms).
// ARGV: 1 now, 2 rpm limit, 3 window ms (60 s + lease), 4 permits wanted
// (0: none needed), 5 member prefix, 6 max concurrent, 7 replica, 8 slot
// needed (0/1), 9 slots kept, 10 slot expiry ms, 11 old member to shrink
// ("" none), 12 its new count, 13 its new member.
// Returns {permits granted, permits counted in window, retry ms,
// slots held, slots held by others, slot denied (0/1)}.
//
// A permit or slot is granted only together with the other one asked for.
var admitScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local rpm = tonumber(ARGV[2])
local win = tonumber(ARGV[3])
local wantP = tonumber(ARGV[4])
local maxc = tonumber(ARGV[6])
local rep = ARGV[7]
local needS = tonumber(ARGV[8])
local keepS = tonumber(ARGV[9])
local ttl = tonumber(ARGV[10])
local function cnt(m) return tonumber(string.match(m, ':(%d+)$')) end
if ARGV[11] ~= '' then
  local s = redis.call('ZSCORE', KEYS[1], ARGV[11])
  if s then
    redis.call('ZREM', KEYS[1], ARGV[11])
    if tonumber(ARGV[12]) > 0 then redis.call('ZADD', KEYS[1], s, ARGV[13]) end
  end
end
local others = 0
local hold = keepS
local slotDenied = 0
if maxc > 0 then
  local h = redis.call('HGETALL', KEYS[2])
  local t = {}
  for i = 1, #h, 2 do t[h[i]] = h[i+1] end
  for f, v in pairs(t) do
    if string.sub(f, -2) ~= ':e' and f ~= rep then
      if tonumber(t[f .. ':e'] or '0') <= now then
        redis.call('HDEL', KEYS[2], f, f .. ':e')
      else
        others = others + tonumber(v)
      end
    end
  end
  if needS > 0 then
    if keepS + 1 + others <= maxc then hold = keepS + 1 else slotDenied = 1 end
  end
end
local grantP, sum, retry = 0, 0, 0
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - win))
  local es = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 1, #es, 2 do sum = sum + cnt(es[i]) end
  if wantP > 0 and slotDenied == 0 then
    local room = rpm - sum
    if room >= 1 then
      grantP = math.min(wantP, math.max(1, math.floor(room / 4)))
      redis.call('ZADD', KEYS[1], now, ARGV[5] .. ':' .. grantP)
      redis.call('PEXPIRE', KEYS[1], win + 1000)
      sum = sum + grantP
    else
      local acc = 0
      for i = 1, #es, 2 do
        acc = acc + cnt(es[i])
        if sum - acc < rpm then retry = tonumber(es[i+1]) + win - now + 1 break end
      end
      if needS > 0 then hold = keepS end
    end
  end
end
if maxc > 0 then
  if hold > 0 then
    redis.call('HSET', KEYS[2], rep, hold, rep .. ':e', now + ttl)
    redis.call('PEXPIRE', KEYS[2], ttl + 1000)
  else
    redis.call('HDEL', KEYS[2], rep, rep .. ':e')
  end
end
return {grantP, sum, retry, hold, others, slotDenied}
`)

// tokenScript settles charges, refreshes this replica's token lease and
// leases more.
//
// KEYS: 1 period counter (hash: used, l:<replica> lease, e:<replica> lease
// expiry ms, s:<replica> charges applied), 2 lifetime counter (string),
// 3 lifetime charges applied (hash: replica -> tokens).
// ARGV: 1 now, 2 replica, 3 budget (0: unlimited), 4 period charge,
// 5 lifetime charge, 6 tokens kept (reserved + free lease), 7 tokens
// needed (the lease fails below this), 8 tokens wanted, 9 prefetch,
// 10 lease expiry ms, 11 counter expiry ms, 12 initial used (-1: none),
// 13 initial lifetime (-1: none), 14 the replica's period charges sent in
// all, this one included, 15 the same for lifetime (-1: no lifetime
// charge in this call).
// Returns {tokens added to the lease, used, others' leases, lifetime}, or
// {-1} when a counter is missing and no initial value was given: the
// caller loads the store's figures and calls again (the first caller's
// initial value wins, so replicas never count twice).
//
// Charges are applied once. A call whose reply is lost (a timeout while
// Redis still ran it) leaves its charges pending at the replica, which
// sends them again with the next call, together with later ones. So each
// call carries, beside the charges not yet acknowledged (4, 5), the
// replica's running total of charges sent (14, 15); the counter records
// the total it has applied per replica (s:<replica>) and adds only the
// difference, never more than the call's charge. A counter without that
// record (new, or rebuilt after a Redis restart) has applied none of this
// replica's charges: it adds the call's charge.
var tokenScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local rep = ARGV[2]
if redis.call('EXISTS', KEYS[1]) == 0 then
  if tonumber(ARGV[12]) < 0 then return {-1} end
  redis.call('HSET', KEYS[1], 'used', ARGV[12])
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  if tonumber(ARGV[13]) < 0 then return {-1} end
  redis.call('SET', KEYS[2], ARGV[13])
end
-- settle returns how much of charge the record field of hash key has not
-- applied yet, given the total sent, and records the total.
local function settle(key, field, sent, charge)
  local c = redis.call('HGET', key, field)
  local d = charge
  if c then d = math.max(0, math.min(charge, sent - tonumber(c))) end
  if not c or sent > tonumber(c) then redis.call('HSET', key, field, sent) end
  return d
end
local used = tonumber(redis.call('HINCRBY', KEYS[1], 'used', settle(KEYS[1], 's:' .. rep, tonumber(ARGV[14]), tonumber(ARGV[4]))))
local lifeAdd = 0
if tonumber(ARGV[15]) >= 0 then
  lifeAdd = settle(KEYS[3], rep, tonumber(ARGV[15]), tonumber(ARGV[5]))
  redis.call('PEXPIRE', KEYS[3], 2764800000)
end
local life = tonumber(redis.call('INCRBY', KEYS[2], lifeAdd))
local h = redis.call('HGETALL', KEYS[1])
local t = {}
for i = 1, #h, 2 do t[h[i]] = h[i+1] end
local others = 0
for f, v in pairs(t) do
  if string.sub(f, 1, 2) == 'l:' and f ~= 'l:' .. rep then
    local r = string.sub(f, 3)
    if tonumber(t['e:' .. r] or '0') <= now then
      redis.call('HDEL', KEYS[1], f, 'e:' .. r)
    else
      others = others + tonumber(v)
    end
  end
end
local budget = tonumber(ARGV[3])
local keep = tonumber(ARGV[6])
local need = tonumber(ARGV[7])
local want = tonumber(ARGV[8])
local extra = tonumber(ARGV[9])
local add = 0
if budget > 0 then
  local avail = budget - used - others - keep
  if need <= avail then
    add = math.min(want, math.max(avail, 0))
    local rest = avail - add
    if rest > 0 and extra > 0 then add = add + math.min(extra, math.floor(rest / 4)) end
  end
end
local lease = keep + add
if lease > 0 then
  redis.call('HSET', KEYS[1], 'l:' .. rep, lease, 'e:' .. rep, now + tonumber(ARGV[10]))
else
  redis.call('HDEL', KEYS[1], 'l:' .. rep, 'e:' .. rep)
end
redis.call('PEXPIRE', KEYS[1], ARGV[11])
return {add, used, others, life}
`)

// usageScript reads a user's standing.
//
// KEYS: 1 rpm log, 2 slot holdings, 3 period counter, 4 lifetime.
// ARGV: 1 now. Returns {used (-1: no counter), leased, lifetime (-1: no
// counter), permits granted in the last 60 s, slots held}.
var usageScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local used, leased, life, rq, slots = -1, 0, -1, 0, 0
local h = redis.call('HGETALL', KEYS[3])
local t = {}
for i = 1, #h, 2 do t[h[i]] = h[i+1] end
if t['used'] then used = tonumber(t['used']) end
for f, v in pairs(t) do
  if string.sub(f, 1, 2) == 'l:' and tonumber(t['e:' .. string.sub(f, 3)] or '0') > now then
    leased = leased + tonumber(v)
  end
end
local l = redis.call('GET', KEYS[4])
if l then life = tonumber(l) end
local es = redis.call('ZRANGEBYSCORE', KEYS[1], now - 60000, '+inf')
for i = 1, #es do rq = rq + tonumber(string.match(es[i], ':(%d+)$')) end
local c = redis.call('HGETALL', KEYS[2])
t = {}
for i = 1, #c, 2 do t[c[i]] = c[i+1] end
for f, v in pairs(t) do
  if string.sub(f, -2) ~= ':e' and tonumber(t[f .. ':e'] or '0') > now then slots = slots + tonumber(v) end
end
return {used, leased, life, rq, slots}
`)

// resetScript sets a period's used tokens to 0, keeping leases.
// KEYS: 1 period counter. ARGV: 1 counter expiry ms.
var resetScript = redis.NewScript(`
redis.call('HSET', KEYS[1], 'used', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 0
`)

// recentScript records admissions a replica made while Redis was away,
// as one grant stamped now (conservative: they happened earlier).
// KEYS: 1 rpm log. ARGV: 1 now, 2 member, 3 window ms.
var recentScript = redis.NewScript(`
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) + 1000)
return 0
`)
