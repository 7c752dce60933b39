import type { Cluster, Redis } from 'ioredis';

import type { Entry, GuardedOp } from '../../../recipes/contract.js';
import { idOf, livenessKey, lockKeys } from './keys.js';

/** The guarded write's script, defined on baton's client with the others (scripts.ts `GUARDED`). */
interface GuardedScript {
  batonGuarded(queue: string, liveness: string, values: string, id: string, ...op: string[]): Promise<number>;
}

/**
 * Where a lock's guarded values live: the hash `baton:{<namespace>/<lock>}:v` (field: the value's
 * name). Under the lock's hash tag, so in its cluster slot with its queue and liveness keys (one
 * script reads them all); no script of the queue reads it. No expiry: the values outlive the holder,
 * and go only when deleted.
 */
export function guardedHash(namespace: string, queue: string): string {
  return `${lockKeys(namespace, queue).base}:v`;
}

/** One script: the write, only if our entry and our session's key in its lock both still exist. */
export async function redisGuardedWrite(
  client: Redis | Cluster,
  namespace: string,
  sessionId: string,
  entry: Entry,
  op: GuardedOp,
): Promise<boolean> {
  const keys = lockKeys(namespace, entry.queue);
  const args = op.type === 'put' ? ['put', op.name, op.value] : ['delete', op.name];
  const applied = await (client as unknown as GuardedScript).batonGuarded(
    keys.queue,
    livenessKey(keys.base, sessionId),
    `${keys.base}:v`,
    idOf(entry.key),
    ...args,
  );
  return applied === 1;
}

/** The value under `name` next to the lock `queue`, or null. */
export async function redisGuardedRead(
  client: Redis | Cluster,
  namespace: string,
  queue: string,
  name: string,
): Promise<string | null> {
  return client.hget(guardedHash(namespace, queue), name);
}
