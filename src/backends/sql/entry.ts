import type { Entry } from '../../../recipes/contract.js';
import type { EntryInfo } from '../../driver-port.js';

/** One row of a queue listing (`list` and `enqueue` in either SQL schema). */
export interface QueueRow extends Record<string, unknown> {
  token: string;
  key: string;
  queue_position: string;
  kind: string;
}

/** The entries of a queue's rows, in the rows' order. */
export function entriesOf(queue: string, rows: readonly QueueRow[]): Entry[] {
  return rows.map((row) => new SqlEntry(queue, row.key, row.kind, BigInt(row.queue_position), BigInt(row.token)));
}

/** One row of a queue's description (`describe`): a queue row with its owner, data and times. */
export interface DescribedRow extends QueueRow {
  session: string;
  data: string;
  /** Numbers, or strings where the client reads them so (mysql2). */
  created_ms: number | string;
  expires_in_ms: number | string;
}

/** A queue's description for `baton inspect`; `ownerOf` turns a session's row id into its id. */
export function describedOf(
  queue: string,
  rows: readonly DescribedRow[],
  ownerOf: (row: string) => string,
): EntryInfo[] {
  const entries = entriesOf(queue, rows);
  return rows.map((row, index) => ({
    entry: entries[index]!,
    owner: ownerOf(String(row.session)),
    client: 'baton',
    data: row.data,
    createdAt: Math.round(Number(row.created_ms)),
    expiresInMs: Math.max(0, Math.round(Number(row.expires_in_ms))),
  }));
}

/**
 * An entry as read from the database. Its order and fencing token are its position (its own token, or
 * that of the entry it took the place of); the row's own token, which names the channel its delete
 * notifies, is kept apart.
 */
export class SqlEntry implements Entry {
  readonly queue: string;
  readonly key: string;
  readonly kind: string;
  readonly order: bigint;
  readonly fencingToken: bigint;
  readonly #token: bigint;

  constructor(queue: string, key: string, kind: string, position: bigint, token: bigint) {
    this.queue = queue;
    this.key = key;
    this.kind = kind;
    this.order = position;
    this.fencingToken = position;
    this.#token = token;
  }

  /** The row's own token (an entry not read here: its fencing token, which is its own unless placed). */
  static rowTokenOf(entry: Entry): bigint {
    return #token in entry ? entry.#token : entry.fencingToken;
  }
}
