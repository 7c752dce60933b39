/** etcd's `connect()` options, `ttlSeconds` and `etcd`, checked. */
import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { CommonSettings } from '../backend.js';
import { isPlainObject } from '../option-checks.js';
import type { EtcdClientOptions } from './public.js';

/** The lease TTL and the etcd3 client settings a session is opened with. */
export interface EtcdSettings {
  readonly ttlSeconds: number;
  readonly client: EtcdClientOptions | undefined;
}

const DEFAULT_TTL_SECONDS = 10;

/** One session timeout for every backend: etcd's lease TTL follows it unless given itself. */
export function etcdSettings(given: Readonly<Record<string, unknown>>, common: CommonSettings): EtcdSettings {
  return {
    ttlSeconds:
      given['ttlSeconds'] === undefined && common.sessionTimeoutGiven
        ? ttlFor(common.sessionTimeoutMs)
        : ttl(given['ttlSeconds']),
    client: etcdClientOptions(given['etcd']),
  };
}

/** The lease TTL for a session timeout: whole seconds, rounded up (etcd raises it to its own minimum). */
function ttlFor(sessionTimeoutMs: number): number {
  return Math.min(86_400, Math.max(1, Math.ceil(sessionTimeoutMs / 1_000)));
}

function ttl(value: unknown): number {
  if (value === undefined) return DEFAULT_TTL_SECONDS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 86_400) {
    throw new InvalidArgumentError('ttlSeconds', value, 'a whole number of seconds from 1 to 86400');
  }
  return value;
}

function etcdClientOptions(value: unknown): EtcdClientOptions | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) {
    throw new InvalidArgumentError('etcd options', value, 'an object with auth, credentials or grpcOptions');
  }
  const { auth, credentials, grpcOptions } = value;
  return {
    ...(auth === undefined ? {} : { auth }),
    ...(credentials === undefined ? {} : { credentials }),
    ...(grpcOptions === undefined ? {} : { grpcOptions }),
  } as EtcdClientOptions;
}
