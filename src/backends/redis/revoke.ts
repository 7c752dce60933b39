import type { Cluster, Redis } from 'ioredis';

import type { Entry } from '../../../recipes/contract.js';
import { entryKey, idOf, lockKeys } from './keys.js';

/**
 * An operator's force release (defined on baton's client with the other scripts, scripts.ts `SCRIPTS`).
 * KEYS: queue. ARGV: entry id, the entry's channel (its key), the queue's channel. Deletes any
 * session's entry and tells both channels, as a release does: 1 if deleted, 0 if it was gone.
 */
export const REVOKE = `
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 'revoked')
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
`;

interface RevokeScript {
  batonRevoke(queue: string, id: string, channel: string, changes: string): Promise<number>;
}

/**
 * Deletes `entry` from its own lock's queue whoever owns it; true once deleted, false if it was gone
 * (also when a script whose reply was lost is sent again).
 */
export async function redisRevoke(client: Redis | Cluster, namespace: string, entry: Entry): Promise<boolean> {
  const keys = lockKeys(namespace, entry.queue);
  const id = idOf(entry.key);
  if (entry.key !== entryKey(keys.base, id)) return false;
  const deleted = await (client as unknown as RevokeScript).batonRevoke(keys.queue, id, entry.key, keys.changes);
  return deleted === 1;
}
