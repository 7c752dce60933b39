import type { Entry, GuardedOp } from '../../../recipes/contract.js';
import type { Row } from './link.js';

/** What a guarded write needs of the driver: its session row, one retried request. */
export interface GuardedHost {
  readonly session: string;
  readonly namespace: string;
  /** A `CALL` on the main connection (its first result set), sent again while it fails only on the way. */
  call<R extends Row>(text: string, values: readonly unknown[]): Promise<R[]>;
  /** A SELECT on the main connection, sent again while it fails only on the way. */
  select<R extends Row>(text: string, values: readonly unknown[]): Promise<R[]>;
}

/**
 * Guarded writes on MySQL: a lock's values are rows of `baton_guarded_values`, written by one procedure
 * that locks the writer's entry and session rows (FOR SHARE, the lease checked by the server's clock)
 * in the same transaction as the write: the sweep that would remove the entry, and so any grant past it,
 * waits for its commit. Values outlive their writer and go only when deleted.
 */
export async function mysqlGuardedWrite(host: GuardedHost, entry: Entry, op: GuardedOp): Promise<boolean> {
  const rows = await host.call<{ held: number | string }>('CALL baton_guarded_write(?, ?, ?, ?, ?)', [
    entry.key,
    host.session,
    op.name,
    op.type === 'put' ? op.value : '',
    op.type === 'put' ? 0 : 1,
  ]);
  return Number(rows[0]?.held) === 1;
}

/** The value kept under `name` next to lock `queue`: a plain read. */
export async function mysqlGuardedRead(host: GuardedHost, queue: string, name: string): Promise<string | null> {
  const rows = await host.select<{ value: string }>(
    'SELECT value FROM baton_guarded_values WHERE namespace = ? AND queue = ? AND name = ?',
    [host.namespace, queue, name],
  );
  return rows[0]?.value ?? null;
}
