import type { Entry } from '../../../recipes/contract.js';
import type { Start } from '../requests.js';
import { isCode, removeStart, type ZkClient, ZkCode } from './client.js';

/**
 * An operator's force release: deletes any session's entry znode (version -1), if it is a child of
 * the entry's own queue directory `dir`. True once deleted, false if it was gone (NO_NODE), also when a
 * delete whose reply was lost is sent again. Every watcher of the znode is told, as with any delete.
 */
export function revokeStart(client: ZkClient, dir: string, entry: Entry): Start<boolean> {
  const remove = removeStart(client, entry.key);
  return (done) => {
    if (entry.key.slice(0, entry.key.lastIndexOf('/')) !== dir) return done(null, false);
    remove((error) => {
      if (error && isCode(error, ZkCode.NO_NODE)) return done(null, false);
      if (error) return done(error);
      done(null, true);
    });
  };
}
