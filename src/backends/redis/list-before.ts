import type { Cluster, Redis } from 'ioredis';

import type { Entry } from '../../../recipes/contract.js';
import { idOf, type LockKeys } from './keys.js';

interface ListBeforeScript {
  batonListBefore(queue: string, base: string, id: string, order: string, limit: string): Promise<string[]>;
}

/** What the short read's script answered: our entry's presence, whether entries were left out, the fields read. */
export interface Before {
  readonly present: boolean;
  readonly more: boolean;
  /** Field, value, ...: the live entries just ahead of ours, nearest first. */
  readonly flat: readonly string[];
}

/**
 * `Backend.listBefore` on Redis: one script (scripts.ts `LIST_BEFORE`, defined on baton's client with
 * the others) that reads the queue's hash on the server, drops dead sessions' entries as every listing
 * does, and sends back only our entry's presence and the `limit` entries just ahead of it. A hash has
 * no order of its own, so the server still walks the queue; what crosses the network and what the
 * client parses no longer grow with it.
 */
export async function readBefore(
  client: Redis | Cluster,
  keys: LockKeys,
  self: Entry,
  limit: number | undefined,
): Promise<Before> {
  const reply = await (client as unknown as ListBeforeScript).batonListBefore(
    keys.queue,
    keys.base,
    idOf(self.key),
    self.order.toString(),
    limit === undefined ? '' : String(limit),
  );
  if (reply[0] !== '1') return { present: false, more: false, flat: [] };
  return { present: true, more: reply[1] === '1', flat: reply.slice(2) };
}
