/**
 * The fence on Redis: a write of a key made only if the writer's fencing token is at least the
 * resource's mark, checked and moved in the same script (redis-script.ts). Works through the user's
 * own ioredis client (a `Redis` or a `Cluster`); this file never loads ioredis.
 */
import { BackendError, InvalidArgumentError, StaleTokenError } from '../../recipes/errors.js';
import { checkOptionKeys } from '../../recipes/validate.js';
import { checkResource, checkToken, tokenFromStore } from './arguments.js';
import { FENCED_WRITE } from './redis-script.js';

/** What the fence needs of an ioredis `Redis` or `Cluster`: `eval`. */
export interface RedisEvalClient {
  /** Runs a Lua script (ioredis's `client.eval(script, numKeys, ...keysAndArgs)`). */
  eval(script: string, numKeys: number, ...args: string[]): Promise<unknown>;
}

/** Options of `RedisFence.set`. */
export interface FencedSetOptions {
  /** The key expires after this many milliseconds (`SET ... PX`). Default: no expiry. */
  readonly px?: number;
}

/**
 * Fenced writes on Redis. The mark of resource `r` is the key `baton:fence:{r}`; the data key must
 * carry the same hash tag `{r}` (e.g. `ledger:{ledger/2026-12}:settled`), so that both are in one
 * slot on a Redis Cluster; a data key without it is refused before anything is sent.
 * A refused write rejects with `StaleTokenError`; the data key is then untouched.
 *
 *   const fence = new RedisFence(redis);
 *   await fence.set('ledger/2026-12', lock.fencingToken, 'ledger:{ledger/2026-12}:settled', 'node-a');
 */
export class RedisFence {
  readonly #client: RedisEvalClient;

  /** `client`: the user's ioredis client; the fence sends one EVAL per write on it. */
  constructor(client: RedisEvalClient) {
    if (typeof (client as { eval?: unknown } | null)?.eval !== 'function')
      throw new InvalidArgumentError('client', client, 'an ioredis Redis or Cluster client');
    this.#client = client;
  }

  /** The mark key of `resource`: `baton:fence:{<resource>}`. */
  static markKey(resource: string): string {
    return `baton:fence:{${checkTaggable(resource)}}`;
  }

  /** `SET key value [PX px]` if `token` is current for `resource`. */
  async set(
    resource: string,
    token: bigint,
    key: string,
    value: string,
    options: FencedSetOptions = {},
  ): Promise<void> {
    checkOptionKeys(options, ['px']);
    const { px } = options;
    if (px !== undefined && (!Number.isInteger(px) || px < 1))
      throw new InvalidArgumentError('px', px, 'a whole number of milliseconds from 1');
    if (typeof value !== 'string') throw new InvalidArgumentError('value', value, 'a string');
    await this.#write(resource, token, key, ['set', value, px === undefined ? '' : String(px)]);
  }

  /** `HSET key field value ...` if `token` is current for `resource`. */
  async hset(resource: string, token: bigint, key: string, fields: Readonly<Record<string, string>>): Promise<void> {
    const pairs = Object.entries(fields ?? {});
    if (pairs.length === 0 || pairs.some(([, value]) => typeof value !== 'string'))
      throw new InvalidArgumentError('fields', fields, 'an object of at least one field, string values');
    await this.#write(resource, token, key, ['hset', ...pairs.flat()]);
  }

  /** `DEL key` if `token` is current for `resource`. */
  async del(resource: string, token: bigint, key: string): Promise<void> {
    await this.#write(resource, token, key, ['del']);
  }

  async #write(resource: string, token: bigint, key: string, operation: string[]): Promise<void> {
    const markKey = RedisFence.markKey(resource);
    checkToken(token);
    if (typeof key !== 'string' || hashTag(key) !== resource)
      throw new InvalidArgumentError('key', key, `a key with the hash tag {${resource}} (the mark's slot)`);
    const reply = await this.#client.eval(FENCED_WRITE, 2, markKey, key, token.toString(), ...operation);
    if (!Array.isArray(reply) || reply.length !== 2) throw new BackendError(`unexpected fence reply ${String(reply)}`);
    if (reply[0] === 1) return;
    throw new StaleTokenError(resource, token, tokenFromStore(reply[1], 'mark'));
  }
}

/** A resource usable as a hash tag: no braces (Redis would end the tag at the first `}`). */
function checkTaggable(resource: string): string {
  checkResource(resource);
  if (/[{}]/.test(resource))
    throw new InvalidArgumentError('resource', resource, 'a name without "{" or "}" (it is the keys\' hash tag)');
  return resource;
}

/** The part of `key` Redis Cluster hashes: between the first `{` and the next `}`, if not empty. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}
