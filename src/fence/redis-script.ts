/**
 * The Redis fence as one Lua script, so that the check, the write and the mark's move are one atomic
 * step on the server. KEYS[1] is the mark key, KEYS[2] the data key (one slot: the same hash tag).
 * ARGV: the token (decimal), the operation (`set`, `hset`, `del`), then its arguments.
 * Replies `{1, token}` when written, `{0, mark}` when refused. The write comes before the mark's move:
 * a write that fails (a key of another type) aborts the script with the mark unchanged.
 */
export const FENCED_WRITE = `
local function below(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
local token = ARGV[1]
local mark = redis.call('GET', KEYS[1])
if mark and below(token, mark) then return {0, mark} end
local op = ARGV[2]
if op == 'set' then
  if ARGV[4] ~= '' then
    redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  else
    redis.call('SET', KEYS[2], ARGV[3])
  end
elseif op == 'hset' then
  redis.call('HSET', KEYS[2], unpack(ARGV, 3))
elseif op == 'del' then
  redis.call('DEL', KEYS[2])
else
  return redis.error_reply('ERR fence: unknown operation ' .. tostring(op))
end
if mark ~= token then redis.call('SET', KEYS[1], token) end
return {1, token}
`;
