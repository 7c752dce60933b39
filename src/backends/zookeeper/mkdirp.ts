import zookeeper from 'node-zookeeper-client';

import { create, exists, isCode, OPEN, type ZkClient } from './client.js';
import type { AfterLook } from './probe.js';

/** How many times `mkdirp` looks for the deepest existing ancestor before it gives up on NO_NODE. */
export const MKDIRP_LOOKS = 5;

/**
 * Creates `path` and whatever ancestors are missing, with `acl`. It looks for the deepest ancestor that
 * exists first: creating an existing node still needs create rights on its parent, which a shared
 * server may deny above the namespace (the client's own mkdirp creates from the root down).
 */
export async function mkdirp(client: ZkClient, path: string, acl = OPEN, afterLook?: AfterLook): Promise<void> {
  const parts = path.split('/').filter((part) => part !== '');
  const at = (depth: number): string => `/${parts.slice(0, depth).join('/')}`;
  // An ancestor found may be deleted before its child is created in it (an empty queue directory is
  // renewed, see `OwnEntries.recycleIfPastLimit` in own-entries.ts): look again from the top, a few times.
  for (let attempt = 0; ; attempt += 1) {
    let existing = parts.length;
    while (existing > 0 && (await exists(client, at(existing))) === null) existing -= 1;
    if (afterLook !== undefined) await afterLook(at(existing));
    try {
      for (let depth = existing + 1; depth <= parts.length; depth += 1) {
        try {
          await create(client, at(depth), zookeeper.CreateMode.PERSISTENT, undefined, acl);
        } catch (error) {
          if (!isCode(error, zookeeper.Exception.NODE_EXISTS)) throw error; // created meanwhile by another client
        }
      }
      return;
    } catch (error) {
      if (!isCode(error, zookeeper.Exception.NO_NODE) || attempt >= MKDIRP_LOOKS - 1) throw error;
    }
  }
}
