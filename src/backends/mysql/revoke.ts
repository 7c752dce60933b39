import type { Entry } from '../../../recipes/contract.js';

/** Sends one DELETE and resolves with the rows it removed (the driver's retried request). */
export type Delete = (text: string, values: readonly unknown[]) => Promise<number>;

const REVOKE = 'DELETE FROM baton_entries WHERE `key` = ? AND namespace = ? AND queue = ?';

/**
 * An operator's force release: deletes any session's entry row, only within the entry's own namespace
 * and queue. True once deleted; false if the row was gone, also when a statement whose reply was lost
 * is sent again. The holder's connection still holds the entry's wake-up name, so its waiters learn of
 * the delete at their next re-read of the row or when the holder's hold check withdraws the entry,
 * whichever comes first: MySQL has no notification a third session could send for it.
 */
export async function mysqlRevoke(remove: Delete, namespace: string, entry: Entry): Promise<boolean> {
  return (await remove(REVOKE, [entry.key, namespace, entry.queue])) > 0;
}
