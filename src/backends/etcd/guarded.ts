import type { ITxnRequest } from 'etcd3';

import type { Entry, GuardedOp } from '../../../recipes/contract.js';
import { EtcdEntry } from './keys.js';

/**
 * Where a lock's guarded values live: `<namespace>/<queue>/~guarded/<name>`. Beside the queue's
 * prefix (`<namespace>/<queue>/#/`), never under it, so that no listing of the queue (baton's, or
 * etcd's Go recipes pointed at `<namespace>/<queue>/#`) sees a value as an entry; and `~` is outside the
 * lock-name alphabet, so no other lock's queue takes it in either. The values have no lease: they
 * outlive the holder, and go only when deleted.
 */
export function guardedKey(namespace: string, queue: string, name: string): Buffer {
  return Buffer.from(`${namespace}/${queue}/~guarded/${name}`);
}

/**
 * One Txn: the write applies only if the entry's key is still the incarnation we created (its create
 * revision, as `guardedDelete` of orphans.ts compares) and still bound to our lease. The entry's key
 * goes with the lease, so a session expired or revoked fails the compare, as does a key deleted by an
 * admin or reused by a later enqueue.
 */
export function guardedTxn(namespace: string, lease: string, entry: Entry, op: GuardedOp): ITxnRequest {
  const entryKey = Buffer.from(entry.key);
  const key = guardedKey(namespace, entry.queue, op.name);
  return {
    compare: [
      { key: entryKey, target: 'Create', result: 'Equal', create_revision: EtcdEntry.createdAt(entry).toString() },
      { key: entryKey, target: 'Lease', result: 'Equal', lease },
    ],
    success: [
      op.type === 'put' ? { request_put: { key, value: Buffer.from(op.value) } } : { request_delete_range: { key } },
    ],
    failure: [],
  };
}
