import type { Ahead, Entry } from '../../../recipes/contract.js';
import { entriesOf, type QueueRow, SqlEntry } from '../sql/entry.js';
import type { PostgresCounters } from './probe.js';

/** What the short read needs of its driver. */
export interface ShortReadHost {
  readonly namespace: string;
  readonly counters: PostgresCounters;
  /** Whether the schema has `list_before` (a schema made by older code may not: see schema-additions.ts). */
  readonly available: boolean;
  /** One statement on the main connection, sent again while it fails only on the way. */
  request<R extends Record<string, unknown>>(text: string, values: readonly unknown[]): Promise<R[]>;
  /** The whole queue, as `list` reads it. */
  list(queue: string): Promise<readonly Entry[]>;
  /** A read's entries without this session's orphans (which go on the way: `OwnEntries.sweepOrphans`). */
  withoutOrphans(entries: Entry[]): Entry[];
}

/**
 * `Backend.listBefore` on PostgreSQL: one call of `<schema>.list_before` (list-before-sql.ts), an index
 * probe below our entry's (position, token), or, where the schema lacks that function, the whole
 * queue listed and cut at our entry (correct, but as costly as a listing).
 */
export class ShortRead {
  readonly #host: ShortReadHost;
  readonly #statement: string;

  constructor(host: ShortReadHost, schema: string) {
    this.#host = host;
    this.#statement = `SELECT * FROM ${schema}.list_before($1, $2, $3, $4, $5, $6)`;
  }

  async before(queue: string, self: Entry, limit: number | undefined): Promise<Ahead> {
    if (!this.#host.available) return aheadIn(await this.#host.list(queue), self, limit);
    const rows = await this.#host.request<QueueRow & { is_self: boolean }>(this.#statement, [
      this.#host.namespace,
      queue,
      self.key,
      self.order.toString(),
      SqlEntry.rowTokenOf(self).toString(),
      limit ?? null,
    ]);
    this.#host.counters.queueRowsRead += rows.length;
    const present = rows[0]?.is_self === true;
    const ahead = entriesOf(
      queue,
      rows.filter((row) => !row.is_self),
    );
    const more = limit !== undefined && ahead.length > limit;
    const entries = this.#host.withoutOrphans(more ? ahead.slice(0, limit) : ahead);
    return { present, entries, more };
  }
}

/** The entries ahead of `self` in a whole listing, nearest first, as `list_before` would answer. */
export function aheadIn(queue: readonly Entry[], self: Entry, limit: number | undefined): Ahead {
  const at = queue.findIndex((e) => e.key === self.key);
  if (at < 0) return { present: false, entries: [], more: false };
  const ahead = queue.slice(0, at).reverse();
  const entries = limit === undefined ? ahead : ahead.slice(0, limit);
  return { present: true, entries, more: entries.length < ahead.length };
}
