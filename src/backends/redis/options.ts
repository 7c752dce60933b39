/** Redis's `connect()` option, `redis` (TLS settings, user and password), checked. */
import { InvalidArgumentError } from '../../../recipes/errors.js';
import { checkOptionKeys } from '../../../recipes/validate.js';
import type { ParsedUrl } from '../backend.js';
import { isPlainObject } from '../option-checks.js';
import type { RedisClientOptions } from './public.js';
import { RedisTarget } from './url.js';

/** The `redis` option, checked; undefined when not given. */
export interface RedisSettings {
  readonly client: RedisClientOptions | undefined;
}

/** The user and password are never shown in an error: only where they are and what is expected. */
export function redisClientOptions(value: unknown): RedisClientOptions | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) throw new InvalidArgumentError('redis options', value, 'an object with tls');
  checkOptionKeys(value, ['tls', 'username', 'password']);
  const { tls, username, password } = value;
  if (tls !== undefined && (typeof tls !== 'object' || tls === null))
    throw new InvalidArgumentError('redis.tls', '(not shown)', 'an object of TLS settings');
  if (username !== undefined && (typeof username !== 'string' || username === ''))
    throw new InvalidArgumentError('redis.username', '(not shown)', 'a non-empty string');
  if (password !== undefined && typeof password !== 'string')
    throw new InvalidArgumentError('redis.password', '(not shown)', 'a string');
  return {
    ...(tls === undefined ? {} : { tls: tls }),
    ...(username === undefined ? {} : { username: username }),
    ...(password === undefined ? {} : { password: password }),
  };
}

/** The `redis` option goes with redis: and rediss: URLs only. */
export function refuseRedisElsewhere({ client }: RedisSettings): void {
  if (client !== undefined) throw new InvalidArgumentError('redis', '(not shown)', 'redis: and rediss: URLs only');
}

/** TLS settings with a plain-text URL would be ignored. */
export function fitRedisUrl({ client }: RedisSettings, url: ParsedUrl<RedisTarget>): void {
  if (client?.tls !== undefined && !url.target.tls) {
    throw new InvalidArgumentError(
      'redis.tls',
      'redis:',
      'a rediss:// URL (TLS settings with a plain-text URL would be ignored)',
    );
  }
}

/** The URL's target with the credentials of the `redis` option, where given. */
export function withCredentials(target: RedisTarget, options: RedisClientOptions | undefined): RedisTarget {
  if (options?.username === undefined && options?.password === undefined) return target;
  return new RedisTarget(
    target.db,
    target.tls,
    options.username ?? target.username,
    options.password ?? target.password(),
  );
}
