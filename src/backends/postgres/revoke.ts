import type { Entry } from '../../../recipes/contract.js';

/** Sends one statement and resolves with its rows (the driver's retried request). */
export type Request = <R extends Record<string, unknown>>(text: string, values: readonly unknown[]) => Promise<R[]>;

/**
 * An operator's force release: deletes any session's entry row, only within the entry's own namespace
 * and queue. The AFTER DELETE trigger notifies the entry's channel, so its waiters wake as on a
 * release. True once deleted; false if the row was gone, also when a statement whose reply was lost
 * is sent again. A guarded transaction holding the row makes the delete wait for it.
 */
export async function postgresRevoke(
  request: Request,
  schema: string,
  namespace: string,
  entry: Entry,
): Promise<boolean> {
  const rows = await request<{ token: string }>(
    `DELETE FROM ${schema}.entries WHERE key = $1 AND namespace = $2 AND queue = $3 RETURNING token`,
    [entry.key, namespace, entry.queue],
  );
  return rows.length > 0;
}
