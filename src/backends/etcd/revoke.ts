import type { ITxnRequest, ITxnResponse } from 'etcd3';

import type { Entry } from '../../../recipes/contract.js';
import { EtcdEntry, queuePrefix } from './keys.js';
import { guardedDelete } from './own-entries.js';

/**
 * An operator's force release: one Txn that deletes any session's entry key if it is still the
 * incarnation listed (its create revision), and only inside the entry's own queue prefix. True once
 * deleted; false if it was gone or replaced, also when a Txn whose reply was lost is sent again.
 * The key's watchers are told, as with any delete.
 */
export async function revokeEntry(
  namespace: string,
  entry: Entry,
  sendTxn: (request: ITxnRequest) => Promise<ITxnResponse>,
): Promise<boolean> {
  if (!entry.key.startsWith(queuePrefix(namespace, entry.queue))) return false;
  const response = await sendTxn(guardedDelete(Buffer.from(entry.key), EtcdEntry.createdAt(entry)));
  return response.succeeded;
}
