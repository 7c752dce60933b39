/**
 * The Lua scripts of the Redis backend. Each runs atomically on the server: one round trip for an
 * enqueue with its read of the queue, one for a waiter's short read, one for a release. Redis does not roll a script back when it
 * fails part-way, so each script checks everything that can fail before its first write.
 *
 * A queue is a hash `<base>:q` (field: the entry's id `<session>-<n>`, value: `<order> <token>
 * <created, server ms> <kind> <data>`) beside its counter `<base>:c`, where `<base>` is
 * `baton:{<namespace>/<lock>}`. A session's liveness in a lock is the key `<base>:s:<session>` with a
 * millisecond expiry, which the session's enqueue sets and its keep-alive renews: an entry lives while
 * its session's key in that lock does. Every key a script touches therefore carries the lock's hash
 * tag (the braces) and sits in the lock's cluster slot, so the scripts run on a Redis Cluster too.
 * The session's own key `baton:session:<id>` (made at open, renewed with the others) is read by no
 * script.
 */

import { REVOKE } from './revoke.js';

/**
 * The live entries of a queue. An entry whose session's key in the lock is gone (expired) is deleted on the way, and
 * its channel told, so that its waiter is woken: inside the same atomic step that reads the queue, no
 * decision ever sees an entry of a dead session.
 */
const LIVE = `
local function live(q, base)
  local all = redis.call('HGETALL', q)
  local alive = {}
  local out = {}
  local dropped = false
  for i = 1, #all, 2 do
    local id = all[i]
    local sid = string.match(id, '^([0-9a-f]+)%-%d+$')
    local keep = true
    if sid then
      if alive[sid] == nil then alive[sid] = redis.call('EXISTS', base .. ':s:' .. sid) == 1 end
      keep = alive[sid]
    end
    if keep then
      out[#out + 1] = id
      out[#out + 1] = all[i + 1]
    else
      redis.call('HDEL', q, id)
      redis.call('PUBLISH', base .. ':e:' .. id, 'expired')
      dropped = true
    end
  end
  if dropped then redis.call('PUBLISH', base .. ':q', 'expired') end
  return out
end
`;

/**
 * What the short reads share: orders and tokens compared as decimal strings (Lua's numbers are
 * doubles, exact only below 2^53), the `limit` entries nearest ahead ordered as keys.ts `parseQueue`
 * orders them (by order, token, then the id's number), and `split`, the live entries parsed, ours apart.
 */
const NEAREST = `
local function decimal(digits) return (string.gsub(digits, '^0+(%d)', '%1')) end
local function less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
local function nearer(x, y)
  if x.order ~= y.order then return less(y.order, x.order) end
  if x.token ~= y.token then return less(y.token, x.token) end
  return x.n > y.n
end
local function nearest(ahead, limit)
  if limit == nil or limit >= #ahead then
    table.sort(ahead, nearer)
    return ahead
  end
  local top = {}
  if limit < 1 then return top end
  for _, e in ipairs(ahead) do
    if #top < limit or nearer(e, top[#top]) then
      local at = #top + 1
      while at > 1 and nearer(e, top[at - 1]) do
        top[at] = top[at - 1]
        at = at - 1
      end
      top[at] = e
      if #top > limit then top[#top] = nil end
    end
  end
  return top
end
local function split(flat, self)
  local mine = nil
  local all = {}
  local foreign = {}
  for i = 1, #flat, 2 do
    local order, token, kind = string.match(flat[i + 1], '^(%d+) (%d+) %d+ ([a-z][a-z_%d]*)')
    local n = string.match(flat[i], '^[0-9a-f]+%-(%d+)$')
    if order and n then
      local e = { id = flat[i], value = flat[i + 1], order = decimal(order), token = decimal(token), n = tonumber(n), kind = kind }
      if e.id == self then mine = e else all[#all + 1] = e end
    else
      foreign[#foreign + 1] = i
    end
  end
  return mine, all, foreign
end
`;

/**
 * KEYS: queue, counter, our session's key in this lock. ARGV: base, entry id, kind, data, `at` as
 * `<order> <token>` (or ''), the session timeout (ms), and '1' if the session has entries in this
 * queue already (its key here must then exist: if it is gone, so are those entries, and the script
 * refuses, `BATONLIVENESS`). The session's key here is set to expire a full timeout from now: the client counts its
 * deadline from this request's send time, as from a renewal. A retry after a lost reply finds the
 * entry it wrote (the id is the client's): the answer's first element says so ('1'), before the live
 * entries. The token is the larger of the counter's next value and the server's clock in microseconds
 * (`TIME`), and is stored as the counter: tokens strictly increase on one server even if its clock
 * goes back, and a counter that went back or is missing (a crash that lost the last writes, an RDB
 * snapshot restored, a failover to a replica that missed writes, a wiped server) still gives tokens
 * above every one given before, as long as the server's clock (the new primary's) has not gone back
 * across the loss. An entry placed `at` another of ours (a downgrade) takes that entry's order and
 * token: the same holder goes on, at the same place.
 */
const PUT = `
if ARGV[7] == '1' and redis.call('EXISTS', KEYS[3]) == 0 then return redis.error_reply("BATONLIVENESS the session's key in this lock is gone") end
redis.call('SET', KEYS[3], '1', 'PX', ARGV[6])
local found = redis.call('HEXISTS', KEYS[1], ARGV[2])
if found == 0 then
  local now = redis.call('TIME')
  local place = ARGV[5]
  if place == '' then
    local last = tonumber(redis.call('GET', KEYS[2]) or '0')
    local token = string.format('%.0f', math.max(last + 1, tonumber(now[1]) * 1000000 + tonumber(now[2])))
    redis.call('SET', KEYS[2], token)
    place = token .. ' ' .. token
  end
  local ms = now[1] .. string.format('%03d', math.floor(tonumber(now[2]) / 1000))
  redis.call('HSET', KEYS[1], ARGV[2], place .. ' ' .. ms .. ' ' .. ARGV[3] .. ' ' .. ARGV[4])
  redis.call('PUBLISH', ARGV[1] .. ':q', ARGV[2])
end
`;

export const ENQUEUE = `${LIVE}${PUT}
local entries = live(KEYS[1], ARGV[1])
table.insert(entries, 1, tostring(found))
return entries
`;

/**
 * The enqueue at the tail that answers with what the waiter's first decision needs
 * (`Backend.enqueueAhead`): KEYS and ARGV as `ENQUEUE`'s (no `at`), then the page. The answer: '1' if
 * an earlier attempt had written the entry; '1' if entries ahead were left out; how many are ahead;
 * '1' if another write entry is queued, '1' if a semaphore's entry is; then our entry, up to `page`
 * entries just ahead of it and every field that is no entry (field, value), for the client to report. The queue is read and its dead entries removed as `LIVE`
 * does: the server still walks the hash, but the answer does not grow with it.
 */
export const ENQUEUE_AHEAD = `${LIVE}${NEAREST}${PUT}
local flat = live(KEYS[1], ARGV[1])
local mine, all, foreign = split(flat, ARGV[2])
if mine == nil then return { tostring(found), '0', '0', '0', '0' } end
local ahead = {}
local writes, semaphores = '0', '0'
for _, e in ipairs(all) do
  if less(e.order, mine.order) then ahead[#ahead + 1] = e end
  if e.kind == 'write' then writes = '1' elseif string.sub(e.kind, 1, 10) == 'semaphore_' then semaphores = '1' end
end
local top = nearest(ahead, tonumber(ARGV[8]))
local out = { tostring(found), #top < #ahead and '1' or '0', tostring(#ahead), writes, semaphores, mine.id, mine.value }
for _, e in ipairs(top) do
  out[#out + 1] = e.id
  out[#out + 1] = e.value
end
for _, i in ipairs(foreign) do
  out[#out + 1] = flat[i]
  out[#out + 1] = flat[i + 1]
end
return out
`;

/** KEYS: queue. ARGV: base. The live entries (see `LIVE`). */
export const LIST = `${LIVE}
return live(KEYS[1], ARGV[1])
`;

/**
 * The short read at a wake (`Backend.listBefore`, see list-before.ts): the queue is read and its dead
 * entries removed as `LIVE` does, and only what a waiter's decision needs goes back. KEYS: queue. ARGV:
 * base, our entry's id, its order, the limit ('' for none). The answer: '1' if our entry is there at that
 * order (that incarnation), else '0' and nothing more; then '1' if entries ahead were left out; then
 * up to `limit` live entries ordered before ours (field, value), nearest first, ordered as keys.ts
 * `parseQueue` orders them: by order, token, then the id's number. Orders and tokens are compared as
 * decimal strings: Lua's numbers are doubles, exact only below 2^53.
 */
export const LIST_BEFORE = `${LIVE}${NEAREST}
local mine, all = split(live(KEYS[1], ARGV[1]), ARGV[2])
if mine == nil or mine.order ~= decimal(ARGV[3]) then return { '0' } end
local ahead = {}
for _, e in ipairs(all) do
  if less(e.order, mine.order) then ahead[#ahead + 1] = e end
end
local limit = tonumber(ARGV[4])
local top = nearest(ahead, limit)
local out = { '1', #top < #ahead and '1' or '0' }
for _, e in ipairs(top) do
  out[#out + 1] = e.id
  out[#out + 1] = e.value
end
return out
`;

/**
 * The backstop's look at the entries this session waits for in one queue, and nothing else of it.
 * KEYS: the queue. ARGV: its base, then each entry's id. For each, 1 if it is gone: its field is
 * missing, or its session's key in the lock is (then it is deleted here and its channels told, as
 * `LIVE` does); else 0.
 */
export const GONE = `
local out = {}
local base = ARGV[1]
for i = 2, #ARGV do
  local id = ARGV[i]
  local gone = redis.call('HEXISTS', KEYS[1], id) == 0
  if not gone then
    local sid = string.match(id, '^([0-9a-f]+)%-%d+$')
    if sid and redis.call('EXISTS', base .. ':s:' .. sid) == 0 then
      redis.call('HDEL', KEYS[1], id)
      redis.call('PUBLISH', base .. ':e:' .. id, 'expired')
      redis.call('PUBLISH', base .. ':q', 'expired')
      gone = true
    end
  end
  out[i - 1] = gone and 1 or 0
end
return out
`;

/**
 * KEYS: queue. ARGV: session id, entry id, the entry's channel (its key), the queue's channel. Deletes
 * our own entry (the owner is checked here, not only by the client) and tells both channels. 1 if
 * deleted, 0 if it was gone already. The session's key in the lock stays: it expires unless renewed.
 */
export const RELEASE = `
local id = ARGV[2]
if string.sub(id, 1, #ARGV[1] + 1) ~= ARGV[1] .. '-' then return redis.error_reply('BATONOWNER not an entry of this session') end
if redis.call('HDEL', KEYS[1], id) == 0 then return 0 end
redis.call('PUBLISH', ARGV[3], 'released')
redis.call('PUBLISH', ARGV[4], id)
return 1
`;

/**
 * KEYS: queue. ARGV: base, entry id. The entry's stored value, or nil if it is gone or its session's
 * key in the lock is (an expired session's entry is dead: a dead leader's data is not read back).
 */
export const READ = `
local value = redis.call('HGET', KEYS[1], ARGV[2])
if not value then return false end
local sid = string.match(ARGV[2], '^([0-9a-f]+)%-%d+$')
if sid and redis.call('EXISTS', ARGV[1] .. ':s:' .. sid) == 0 then return false end
return value
`;

/** KEYS: queue, our session's key in this lock. ARGV: entry id. { entry exists, session's key exists }. */
export const CONFIRM = `
return { redis.call('HEXISTS', KEYS[1], ARGV[1]), redis.call('EXISTS', KEYS[2]) }
`;

/**
 * A guarded write (see src/backends/redis/guarded.ts). KEYS: queue, our session's key in this lock, the
 * lock's values hash `<base>:v`. ARGV: entry id, 'put' or 'delete', the value's name, the value. The
 * write applies only if our entry is in the queue and our session's key in the lock exists (the
 * liveness rule of `LIVE` and `READ`: an entry whose session's key expired is dead): 1 if applied, 0 if not.
 */
export const GUARDED = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if ARGV[2] == 'put' then redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) else redis.call('HDEL', KEYS[3], ARGV[3]) end
return 1
`;

/**
 * The scripts by the command name they are defined under on baton's client, with their key counts.
 */
export const SCRIPTS = {
  batonEnqueue: { numberOfKeys: 3, lua: ENQUEUE },
  batonEnqueueAhead: { numberOfKeys: 3, lua: ENQUEUE_AHEAD },
  batonList: { numberOfKeys: 1, lua: LIST },
  batonListBefore: { numberOfKeys: 1, lua: LIST_BEFORE },
  batonGone: { numberOfKeys: 1, lua: GONE },
  batonRelease: { numberOfKeys: 1, lua: RELEASE },
  batonRead: { numberOfKeys: 1, lua: READ },
  batonConfirm: { numberOfKeys: 2, lua: CONFIRM },
  batonGuarded: { numberOfKeys: 3, lua: GUARDED },
  batonRevoke: { numberOfKeys: 1, lua: REVOKE },
} as const;
