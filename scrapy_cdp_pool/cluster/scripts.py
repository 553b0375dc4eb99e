"""The Lua scripts of the cluster frontier: each call is one atomic step in Redis.

Every script takes the key prefix as ``ARGV[1]``. Those whose keys the caller
knows declare every key they touch in ``KEYS`` (:data:`PUSH`,
:data:`LOCK_PROFILE`, :data:`PAUSE_HOST`, :data:`CLAIM_NAVIGATION`,
:data:`ANSWER_NAVIGATION`); the others build keys from the prefix and say so
in their first line (:data:`UNDECLARED_KEYS`). All keys of a crawl share the
prefix's hash tag, so they live in one Redis Cluster slot. Times are Redis's
own clock (``TIME``, milliseconds), so the workers' clocks never have to
agree. The key layout is in :mod:`scrapy_cdp_pool.cluster`.

A gate is a sub-queue ``q:<gate>`` of the requests sharing a host, an identity
and a not-before time. ``ready`` indexes the gates that may be able to start,
scored by their best request; a gate found closed is *parked*: taken out of
``ready`` and put in ``timed`` with the time it should be looked at again (a
pause's end, a rate interval, a lease's expiry), and, for a busy identity or a
full host, in ``wait_id:<identity>`` / ``wait_host:<host>``, so the release of
that identity or host slot puts it back at once. So :data:`TAKE` looks at each
closed gate once per change of its state, never at every request behind a busy
identity: its cost is O(log n) in Redis plus the gates it parks on the way.
"""

from __future__ import annotations

FEED_MARK = b"\x00feed:"
"""Starts a frontier entry that is an item of the feed, not a request."""
FEED_BATCH = 16
"""Items moved from the feed per take, when fewer requests than this are queued."""
FEED_GATE = "||"
"""The gate of feed entries (no host, no identity)."""

UNDECLARED_KEYS = "--!df flags=allow-undeclared-keys\n"
"""First line of a script that builds key names from the prefix (``ARGV[1]``)
instead of declaring them all in ``KEYS``: the frontier's scripts that reach
a gate's queue, a lease's profile lock or host slot from what they read. A
Lua comment to Redis; DragonflyDB reads it as the script's flag to allow it
(it refuses undeclared keys otherwise). Every other script declares every
key it touches (``tests/unit/test_cluster_script_keys.py`` checks both)."""

_PRELUDE = (
    UNDECLARED_KEYS
    + r"""
local P = ARGV[1]
local FEED_MARK = '\0feed:'
local FEED_GATE = '||'
local FEED_BATCH = 16
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- a gate became ready that was not: at the end (publish_wake) one token is
-- pushed to the list 'wake', popped (BLPOP) by one waiting worker, which
-- takes again (instead of every worker asking every few ms)
local WAKE_TOKENS = 8
local woke = false
local function push_token()
  redis.call('LPUSH', P .. 'wake', '1')
  redis.call('LTRIM', P .. 'wake', 0, WAKE_TOKENS - 1)
end
local function publish_wake()
  if woke and redis.call('EXISTS', P .. 'ready') == 1 then push_token() end
end
local function split_gate(g)
  return string.match(g, '^([^|]*)|([^|]*)|(.*)$')
end
local function rescore(g)
  -- a gate that is not parked: in ready by its best request, out when empty
  local head = redis.call('ZRANGE', P .. 'q:' .. g, 0, 0, 'WITHSCORES')
  if #head > 0 then
    redis.call('ZADD', P .. 'ready', head[2], g)
  else
    redis.call('ZREM', P .. 'ready', g)
  end
end
local function unpark(g)
  redis.call('ZREM', P .. 'timed', g)
  rescore(g)
end
local function unpark_set(key)
  local gates = redis.call('SMEMBERS', key)
  if #gates == 0 then return end
  woke = true
  for _, g in ipairs(gates) do unpark(g) end
  redis.call('DEL', key)
end
local function queue(g, score, id)
  -- a request into gate g; an unparked gate is in ready by its best
  -- request, so ZADD LT keeps that (and adds the gate when it was empty)
  redis.call('ZADD', P .. 'q:' .. g, score, id)
  redis.call('INCR', P .. 'queued')
  if not redis.call('ZSCORE', P .. 'timed', g) then
    if redis.call('ZADD', P .. 'ready', 'LT', score, g) == 1 then woke = true end
  end
end
local function park(g, due)
  redis.call('ZREM', P .. 'ready', g)
  redis.call('ZADD', P .. 'timed', due, g)
end
local function lease_of(id)
  local raw = redis.call('HGETALL', P .. 'lease:' .. id)
  if #raw == 0 then return nil end
  local lease = {}
  for i = 1, #raw, 2 do lease[raw[i]] = raw[i + 1] end
  return lease
end
local function release(id, lease)
  if lease.released == '1' then return end
  redis.call('HSET', P .. 'lease:' .. id, 'released', '1')
  if lease.identity ~= '' then
    local ik = P .. 'identity:' .. lease.identity
    if redis.call('HGET', ik, 'token') == lease.token then redis.call('DEL', ik) end
    unpark_set(P .. 'wait_id:' .. lease.identity)
  end
  if redis.call('ZREM', P .. 'slots:' .. lease.host, id) == 1 then
    unpark_set(P .. 'wait_host:' .. lease.host)
  end
end
local function requeue(id, lease, gate)
  gate = gate or lease.gate
  release(id, lease)
  redis.call('DEL', P .. 'lease:' .. id)
  redis.call('ZREM', P .. 'leases', id)
  if redis.call('HEXISTS', P .. 'req', id) == 1 then queue(gate, tonumber(lease.score), id) end
end
local function settle(op, id, worker)
  local lease = lease_of(id)
  if lease == nil or lease.owner ~= worker then return 0 end
  if op == 'r' then
    release(id, lease)
  elseif op == 'a' then
    release(id, lease)
    redis.call('DEL', P .. 'lease:' .. id)
    redis.call('ZREM', P .. 'leases', id)
    redis.call('HDEL', P .. 'expired', id)
    if redis.call('HEXISTS', P .. 'poisoned', id) == 0 then
      redis.call('HDEL', P .. 'req', id)
      redis.call('HINCRBY', P .. 'stats', 'acked', 1)
    end  -- a poisoned request is kept, not done (scrapy-cdp-pool cluster poisoned)
  elseif op == 'g' then
    requeue(id, lease)
  end
  return 1
end
local function settle_all(worker, first)
  local done = 0
  for i = first, #ARGV do
    done = done + settle(string.sub(ARGV[i], 1, 1), string.sub(ARGV[i], 3), worker)
  end
  return done
end
"""
)

PUSH = r"""
-- KEYS: seq (the crawl's route key), the seen set or Bloom filter bitmap
-- (seq again when none), req, q:<gate>, queued, timed, ready, wake, the
-- Bloom filter's count (seq when none); ARGV: prefix (unused), '' for no
-- fingerprint, 'b' for the Bloom filter, else the seen set's name,
-- fingerprint, gate, base score, data, then the Bloom filter's bit offsets
local seq, seen, req, q, queued, timed, ready, wake =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
if ARGV[2] == 'b' then
  -- set the fingerprint's bits in one BITFIELD: seen when all were set
  local ops = {}
  for i = 7, #ARGV do
    ops[#ops + 1] = 'SET'
    ops[#ops + 1] = 'u1'
    ops[#ops + 1] = ARGV[i]
    ops[#ops + 1] = 1
  end
  local new = false
  for _, old in ipairs(redis.call('BITFIELD', seen, unpack(ops))) do
    if old == 0 then new = true end
  end
  if not new then return 0 end
  redis.call('INCR', KEYS[9])
elseif ARGV[2] ~= '' and redis.call('SADD', seen, ARGV[3]) == 0 then
  return 0
end
local id = redis.call('INCR', seq)
redis.call('HSET', req, id, ARGV[6])
local score = tonumber(ARGV[5]) + id
redis.call('ZADD', q, score, id)
redis.call('INCR', queued)
-- a gate that is not parked is in ready by its best request (ZADD LT keeps
-- it); one that became ready wakes one waiting worker (as TAKE's publish_wake)
if not redis.call('ZSCORE', timed, ARGV[4])
    and redis.call('ZADD', ready, 'LT', score, ARGV[4]) == 1 then
  redis.call('LPUSH', wake, '1')
  redis.call('LTRIM', wake, 0, 7)
  return id
end
return -id
"""
"""Store a request (with its fingerprint, if any, in the same step: in a
set, or in the Bloom filter's bits, :mod:`~scrapy_cdp_pool.cluster.bloom`):
its id when its gate became ready with it (a wake token pushed), minus its
id when the gate did not (parked, or ready already), 0 when the fingerprint
was seen already. Declares every key it touches (:func:`push_keys`)."""


def push_keys(prefix: str, seen: str, gate: str, bloom: tuple[str, str] | None = None) -> list[str]:
    """:data:`PUSH`'s keys: ``seen`` is the seen set's name after the prefix
    (``''``: none); ``bloom``: the Bloom filter's bitmap and count keys instead."""
    names = ("seq", seen or "seq", "req", f"q:{gate}", "queued", "timed", "ready", "wake", "seq")
    keys = [prefix + name for name in names]
    if bloom is not None:
        keys[1], keys[8] = bloom
    return keys


TAKE = (
    _PRELUDE
    + r"""
-- KEYS: the crawl's route key, then the feed key, if any; ARGV: prefix, worker,
-- lease ms, host concurrency
-- (0: none), host interval ms (0: none), most gates to look at, leases of a
-- request that may run out before it is poisoned, '1' to read the profile's
-- stored copy with it, the latest Redis time (ms) it may lease a request at
-- ('0': any), how many more requests the worker takes right after this one
-- (its free slots: open gates beyond those wake another worker), then settle
-- ops ('r:<id>' releases, then 'a:<id>' acks: see SETTLE); settled counts the acks
local worker = ARGV[2]
local lease_ms = tonumber(ARGV[3])
local conc = tonumber(ARGV[4])
local interval = tonumber(ARGV[5])
local now = now_ms()
local max_deliveries = tonumber(ARGV[7])
local copy_profile = ARGV[8] == '1'
local deadline = tonumber(ARGV[9])
local spare = tonumber(ARGV[10])
local settled = 0
for i = 11, #ARGV do
  local op = string.sub(ARGV[i], 1, 1)
  local done = settle(op, string.sub(ARGV[i], 3), worker)
  if op == 'a' then settled = settled + done end
end
local feed_type = ''
if #KEYS > 1 and tonumber(redis.call('GET', P .. 'queued') or '0') < FEED_BATCH then
  -- items pushed to the feed (a list, set or sorted set, read as scrapy-redis
  -- reads each) become frontier entries, converted into requests by the
  -- worker that takes them
  feed_type = redis.call('TYPE', KEYS[2])['ok']
  local items = {}
  if feed_type == 'list' then
    items = redis.call('LPOP', KEYS[2], FEED_BATCH) or {}
  elseif feed_type == 'set' then
    items = redis.call('SPOP', KEYS[2], FEED_BATCH)
  elseif feed_type == 'zset' then
    local popped = redis.call('ZPOPMAX', KEYS[2], FEED_BATCH)
    for i = 1, #popped, 2 do table.insert(items, popped[i]) end
  end
  if feed_type == 'list' or feed_type == 'set' or feed_type == 'zset' or feed_type == 'none' then
    feed_type = ''
  end
  for _, data in ipairs(items) do
    local id = redis.call('INCR', P .. 'seq')
    redis.call('HSET', P .. 'req', id, FEED_MARK .. data)
    queue(FEED_GATE, id, id)
  end
end
redis.call('ZADD', P .. 'workers', now, worker)
local requeued = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', now, 'LIMIT', 0, 100)) do
  local lease = lease_of(id)
  if lease then
    -- a request whose leases ran out max_deliveries times is poisoned: queued
    -- again at the open gate, handed out to fail by name, never downloaded
    local expired = redis.call('HINCRBY', P .. 'expired', id, 1)
    if expired >= max_deliveries then
      -- recorded with where it was queued (for the operator's requeue)
      redis.call('HSETNX', P .. 'poisoned', id, cjson.encode({at = now, deliveries = expired,
        gate = lease.gate, score = lease.score}))
      requeue(id, lease, FEED_GATE)
    else
      requeue(id, lease)
    end
  else
    redis.call('ZREM', P .. 'leases', id)
  end
  requeued = requeued + 1
end
if requeued > 0 then redis.call('HINCRBY', P .. 'stats', 'requeued', requeued) end
for _, g in ipairs(redis.call('ZRANGEBYSCORE', P .. 'timed', '-inf', now, 'LIMIT', 0, 100)) do
  unpark(g)
end
local function result(id, data, token, poisoned, more, ident, open_left)
  local ready_left
  if open_left == nil then
    -- not scanned (a stale take, a paused crawl): what its releases made ready
    publish_wake()
    ready_left = redis.call('EXISTS', P .. 'ready')
  else
    -- scanned: a token only for gates open beyond what this worker takes next
    if open_left > spare then push_token() end
    ready_left = open_left > 0 and 1 or 0
  end
  local wait = -1
  if more then
    wait = 0
  elseif id == '' or ready_left == 0 then
    -- nothing may start: when to look again (a parked gate due, a lease
    -- running out); sooner if told on the wake channel
    for _, key in ipairs({'timed', 'leases'}) do
      local nxt = redis.call('ZRANGE', P .. key, 0, 0, 'WITHSCORES')
      if #nxt > 0 then
        local due = math.max(0, tonumber(nxt[2]) - now)
        if wait < 0 or due < wait then wait = due end
      end
    end
  end
  local queued = tonumber(redis.call('GET', P .. 'queued') or '0')
  local answer = {id, data, token, requeued, settled, queued, redis.call('ZCARD', P .. 'leases'),
    wait, feed_type, poisoned or 0, ready_left, now}
  if copy_profile and ident and ident ~= '' then
    -- the profile's stored copy and the fleet's verdict on it, read with the
    -- take (its lock is this worker's now: no save-back can come between)
    local copy = redis.call('HMGET', P .. 'profile:' .. ident, 'state', 'identity')
    table.insert(answer, copy[1])
    table.insert(answer, copy[2])
    local health = redis.call('HMGET', P .. 'profile_health:' .. ident, 'retired',
                              'consecutive_failures')
    table.insert(answer, health[1])
    table.insert(answer, health[2])
  end
  return answer
end
-- a take run after its sender gave up on it (sent to a Redis that stopped
-- answering, run when it went on): a lease nobody would know of, that would
-- run out and count as a delivery (poison)
if deadline > 0 and now > deadline then return result('', '', '', 0, true) end
if redis.call('EXISTS', P .. 'paused') == 1 then return result('', '', '') end
-- the best open gate is taken from; the scan goes on past it (without
-- taking) to count the gates still open, up to one more than the worker's
-- spare slots: a closed gate is parked on the way, as a later take would
local exhausted = false
local picked = nil
local open_left = 0
local pos = 0
for _ = 1, tonumber(ARGV[6]) do
  local head = redis.call('ZRANGE', P .. 'ready', pos, pos)
  if #head == 0 then exhausted = true break end
  local g = head[1]
  local host, nb, ident = split_gate(g)
  local top = redis.call('ZRANGE', P .. 'q:' .. g, 0, 0, 'WITHSCORES')
  local ik = P .. 'identity:' .. ident
  local open = false
  if #top == 0 then
    redis.call('ZREM', P .. 'ready', g)
  elseif nb ~= '' and tonumber(nb) > now then
    park(g, tonumber(nb))
  elseif ident ~= '' and redis.call('EXISTS', ik) == 1 then
    redis.call('SADD', P .. 'wait_id:' .. ident, g)
    park(g, now + math.max(1, redis.call('PTTL', ik)))
  else
    local paused = redis.call('PTTL', P .. 'pause:' .. host)
    local sk = P .. 'slots:' .. host
    if paused > 0 then
      park(g, now + paused)
    elseif conc > 0 and redis.call('ZREMRANGEBYSCORE', sk, '-inf', now) >= 0
        and redis.call('ZCARD', sk) >= conc then
      redis.call('SADD', P .. 'wait_host:' .. host, g)
      park(g, tonumber(redis.call('ZRANGE', sk, 0, 0, 'WITHSCORES')[2]))
    else
      local last = interval > 0 and redis.call('GET', P .. 'last:' .. host)
      if last and tonumber(last) + interval > now then
        park(g, tonumber(last) + interval)
      else
        open = true
      end
    end
  end
  if open and picked ~= nil then
    open_left = open_left + 1
    if open_left > spare then break end
    pos = pos + 1  -- left ready, open: the next one
  elseif open then
    local id = top[1]
    redis.call('ZREM', P .. 'q:' .. g, id)
    redis.call('DECR', P .. 'queued')
    rescore(g)  -- looked at again in turn: its profile or host may be closed now
    local token = ''
    if ident ~= '' then
      token = tostring(redis.call('INCR', P .. 'fence'))
      redis.call('HSET', ik, 'owner', worker, 'token', token, 'lease', id)
      redis.call('PEXPIRE', ik, lease_ms)
    end
    if conc > 0 then redis.call('ZADD', P .. 'slots:' .. host, now + lease_ms, id) end
    if interval > 0 then redis.call('SET', P .. 'last:' .. host, now, 'PX', interval) end
    redis.call('HSET', P .. 'lease:' .. id, 'owner', worker, 'gate', g, 'score', top[2],
      'identity', ident, 'host', host, 'token', token, 'released', '0', 'taken', now)
    redis.call('ZADD', P .. 'leases', now + lease_ms, id)
    local poisoned = 0
    if g == FEED_GATE then
      poisoned = tonumber(redis.call('HGET', P .. 'expired', id) or '0')
      if poisoned < max_deliveries then poisoned = 0 end
    end
    picked = {id, redis.call('HGET', P .. 'req', id), token, poisoned, ident}
  end
end
if picked ~= nil then
  -- the scan stopped at its limit: more may be open past it
  if not exhausted and open_left <= spare then open_left = math.max(open_left, 1) end
  return result(picked[1], picked[2], picked[3], picked[4], false, picked[5], open_left)
end
return result('', '', '', 0, not exhausted, nil, 0)
"""
)
"""Release and acknowledge (the worker's settle ops ride on its take), move
feed items in, reclaim expired leases, then take the best
request whose gate is open: ``[id, data, fencing token, requeued, settled,
queued, leased, ms to look again when none may start (a parked gate due, a
lease running out; 0: the take stopped at its scan limit, -1: nothing
due), the feed key's type
when the take could not read it ('' otherwise)]``; ``id`` is empty when none
may start; then how many leases of the request ran out when that reached
the most allowed (it is poisoned: fail it, do not download it), else 0; then
1 when a gate was found open past the request taken (another take may start
one; looked for up to the worker's spare slots + 1, a token pushed for those
beyond them), else 0; with
the profile copy asked for and a request of a profile taken, its stored
``state``, ``identity``, health's ``retired`` and ``consecutive_failures``
(each nil when absent). The
feed key is the script's second declared key (``KEYS[2]``), after the crawl's
route key (see :mod:`~scrapy_cdp_pool.cluster.redis_client`)."""

SETTLE = (
    _PRELUDE
    + r"""
-- ARGV: prefix, worker, then ops: 'r:<id>' release the identity lock and host
-- slot, 'a:<id>' acknowledge (release and forget), 'g:<id>' give back (queue again)
local done = settle_all(ARGV[2], 3)
publish_wake()
return done
"""
)
"""Settle leases this worker holds; the count settled (others were not its own)."""

RENEW = (
    _PRELUDE
    + r"""
-- ARGV: prefix, worker, lease ms, then request ids, or 'i:<token>:<identity>'
-- for an identity lock taken outside the queue
local worker = ARGV[2]
local lease_ms = tonumber(ARGV[3])
local now = now_ms()
redis.call('ZADD', P .. 'workers', now, worker)
local lost = {}
for i = 4, #ARGV do
  local arg = ARGV[i]
  if string.sub(arg, 1, 2) == 'i:' then
    local token, ident = string.match(arg, '^i:([^:]*):(.*)$')
    local ik = P .. 'identity:' .. ident
    if redis.call('HGET', ik, 'token') == token then
      redis.call('PEXPIRE', ik, lease_ms)
    else
      table.insert(lost, arg)
    end
  else
    local lease = lease_of(arg)
    local ik = lease and P .. 'identity:' .. lease.identity
    if lease == nil or lease.owner ~= worker then
      table.insert(lost, arg)
    elseif lease.released ~= '1' and lease.identity ~= ''
        and redis.call('HGET', ik, 'token') ~= lease.token then
      -- its profile lock ran out and went to another request: lost too (a
      -- renewal found held means lease and lock are this worker's till now +
      -- lease, which the launch check leans on)
      table.insert(lost, arg)
    else
      redis.call('ZADD', P .. 'leases', 'XX', now + lease_ms, arg)
      if lease.released ~= '1' then
        if lease.identity ~= '' then redis.call('PEXPIRE', ik, lease_ms) end
        redis.call('ZADD', P .. 'slots:' .. lease.host, 'XX', now + lease_ms, arg)
      end
    end
  end
end
return lost
"""
)
"""Extend this worker's leases (and the identity locks and host slots they
hold) by the lease time from now; returns those it no longer holds (the
lease gone or another worker's, or, before its release, its identity lock
no longer held with its fencing token)."""

HOLDS = (
    _PRELUDE
    + r"""
-- ARGV: prefix, worker, request id: whether this worker still holds the
-- request's lease (not run out) and, while it is not released, the identity
-- lock with the fencing token it was taken with. Writes nothing.
local lease = lease_of(ARGV[3])
if lease == nil or lease.owner ~= ARGV[2] then return 0 end
local expiry = redis.call('ZSCORE', P .. 'leases', ARGV[3])
if not expiry or tonumber(expiry) <= now_ms() then return 0 end
if lease.identity ~= '' and lease.released ~= '1' and
    redis.call('HGET', P .. 'identity:' .. lease.identity, 'token') ~= lease.token then
  return 0
end
return 1
"""
)
"""Whether a request's lease (and its identity lock) is still this worker's:
1 or 0. Asked right before the request leaves for the browser or download."""

POISONED = (
    _PRELUDE
    + r"""
-- ARGV: prefix, 'requeue' or 'drop', then request ids. Each one poisoned and
-- not leased now is taken out of the open gate (if it waits there to fail),
-- then queued again at its own gate with its score, its leases run out
-- counted from 0 ('requeue'), or deleted ('drop'); returns the ids done
local done = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local raw = redis.call('HGET', P .. 'poisoned', id)
  if raw and not redis.call('ZSCORE', P .. 'leases', id) then
    if redis.call('ZREM', P .. 'q:' .. FEED_GATE, id) == 1 then
      redis.call('DECR', P .. 'queued')
      rescore(FEED_GATE)
    end
    redis.call('HDEL', P .. 'poisoned', id)
    redis.call('HDEL', P .. 'expired', id)
    if ARGV[2] == 'requeue' and redis.call('HEXISTS', P .. 'req', id) == 1 then
      local record = cjson.decode(raw)
      queue(record.gate, tonumber(record.score), id)
    else
      redis.call('HDEL', P .. 'req', id)
    end
    table.insert(done, id)
  end
end
publish_wake()
return done
"""
)
"""The operator's requeue or drop of poisoned requests (``scrapy-cdp-pool
cluster poisoned --requeue|--drop``): the ids done (a request leased now,
being failed by a worker, is left: asked again after)."""

ALLOW_OOM = "#!lua flags=allow-oom\n"
"""Prefix of :data:`RENEW` and :data:`SETTLE` on Redis 7 and later: they run
when Redis refuses writes for lack of memory (``maxmemory``, ``noeviction``),
since renewing a lease or acknowledging a request frees or keeps memory; so an
out-of-memory Redis does not let the leases of running requests run out."""

LOCK_PROFILE = r"""
-- KEYS: identity:<profile>, fence; ARGV: prefix (unused), worker, lease ms:
-- a profile lock taken outside the queue (a request downloaded without the
-- scheduler); its fencing token, or 0
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'token', token, 'lease', '')
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return token
"""

UNLOCK_PROFILE = (
    _PRELUDE
    + r"""
-- ARGV: prefix, identity, token
local ik = P .. 'identity:' .. ARGV[2]
if redis.call('HGET', ik, 'token') ~= ARGV[3] then return 0 end
redis.call('DEL', ik)
unpark_set(P .. 'wait_id:' .. ARGV[2])
publish_wake()
return 1
"""
)

PAUSE_HOST = r"""
-- KEYS: pause:<host>, pauses; ARGV: prefix, ms, host: no request to the host
-- starts for ms from now (a longer pause in place is kept); a new end is
-- indexed in pauses and published on <prefix>hosts ('<ms>|<host>', read by
-- every worker's HostEvents); returns the pause's ms left
local ms = tonumber(ARGV[2])
if redis.call('PTTL', KEYS[1]) < ms then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('SET', KEYS[1], now + ms, 'PX', ms)
  redis.call('ZADD', KEYS[2], now + ms, ARGV[3])
  redis.call('PUBLISH', ARGV[1] .. 'hosts', ms .. '|' .. ARGV[3])
end
return redis.call('PTTL', KEYS[1])
"""


CLAIM_NAVIGATION = r"""
-- KEYS: pause:<host>, navigated:<host>; ARGV: prefix (unused), token, lease
-- ms[, 'peek']: claim the next navigation to the host (CDP_POOL_HOST_RATE,
-- fleet-wide) unless it is paused or the last claim has not run out (its
-- answer, then one interval); returns 0 when claimed (peek: when it could
-- be, nothing claimed), else the ms to wait: negative while the last claim
-- waits for its answer (it may come any time)
local pause = redis.call('PTTL', KEYS[1])
if pause > 0 then return pause end
local left = redis.call('PTTL', KEYS[2])
if left > 0 then
  local last = redis.call('GET', KEYS[2])
  if last and string.sub(last, -2) == '|a' then return left end
  return -left
end
if ARGV[4] ~= 'peek' then redis.call('SET', KEYS[2], ARGV[2], 'PX', tonumber(ARGV[3])) end
return 0
"""

ANSWER_NAVIGATION = r"""
-- KEYS: navigated:<host>; ARGV: prefix, token, interval ms, host: the
-- navigation of the claim ``token`` has its answer (or ended): the next may
-- start one interval from now; starts waiting for it are told on
-- <prefix>answered:<host> (HostEvents)
local last = redis.call('GET', KEYS[1])
if last == ARGV[2] then
  redis.call('SET', KEYS[1], ARGV[2] .. '|a', 'PX', tonumber(ARGV[3]))
  redis.call('PUBLISH', ARGV[1] .. 'answered:' .. ARGV[4], '1')
elseif last == ARGV[2] .. '|a' then
  redis.call('SET', KEYS[1], ARGV[2] .. '|a', 'PX', tonumber(ARGV[3]))
end
return 0
"""


def host_keys(prefix: str, host: str) -> tuple[str, str]:
    """``(pause:<host>, navigated:<host>)``: the keys of
    :data:`CLAIM_NAVIGATION` (both), :data:`ANSWER_NAVIGATION` (the second)
    and :data:`PAUSE_HOST` (the first, then ``<prefix>pauses``)."""
    return f"{prefix}pause:{host}", f"{prefix}navigated:{host}"
