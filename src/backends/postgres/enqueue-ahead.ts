import type { AheadAsked, Enqueued, EnqueuedAhead } from '../../../recipes/contract.js';
import { type Mover, moversAhead } from '../../../recipes/decide.js';
import type { QueueRow } from '../sql/entry.js';
import type { OwnEntries } from '../sql/own-entries.js';
import { aheadIn } from './list-before.js';
import type { PostgresCounters } from './probe.js';

/** What the bounded enqueue needs of its driver. */
export interface BoundedEnqueueHost {
  readonly session: string;
  readonly namespace: string;
  readonly counters: PostgresCounters;
  /** Whether the schema has `enqueue_ahead` (one made by older code may not: see schema-additions.ts). */
  readonly available: boolean;
  readonly own: OwnEntries;
  /** One statement on the main connection, sent again while it fails only on the way. */
  request<R extends Record<string, unknown>>(
    text: string,
    values: readonly unknown[],
    onAttempt: () => void,
  ): Promise<R[]>;
  /** The enqueue answered with the whole queue. */
  enqueue(queue: string, kind: string, data: string | undefined): Promise<Enqueued>;
}

/** A row of `enqueue_ahead`'s answer: an entry, and the counts of the whole answer on every row. */
interface AheadRow extends QueueRow {
  is_self: boolean;
  created: boolean;
  /** Null unless counted (`AheadAsked.count`). */
  ahead: string | null;
  writes: boolean;
  semaphores: boolean;
}

/**
 * `Backend.enqueueAhead` on PostgreSQL: one call of `<schema>.enqueue_ahead` (enqueue-ahead-sql.ts),
 * whose answer is our row and at most `page + 1` entries ahead, nearest first, whatever the queue's
 * length (and the count of the entries ahead, which reads the queue, only when asked for); or, where
 * the schema lacks that function, the enqueue with the whole queue, cut at our entry.
 */
export class BoundedEnqueue {
  readonly #host: BoundedEnqueueHost;
  readonly #statement: string;

  constructor(host: BoundedEnqueueHost, schema: string) {
    this.#host = host;
    this.#statement = `SELECT * FROM ${schema}.enqueue_ahead($1, $2, $3, $4, $5, $6, $7, $8)`;
  }

  async enqueue(
    queue: string,
    kind: string,
    { page, count }: AheadAsked,
    data: string | undefined,
  ): Promise<EnqueuedAhead> {
    const host = this.#host;
    if (!host.available) return windowOfListing(await host.enqueue(queue, kind, data), page);
    let answer: readonly AheadRow[] = [];
    const placed = await host.own.enqueue<AheadRow>(
      queue,
      kind,
      async (key, attempted) => {
        const values = [host.session, key, host.namespace, queue, kind, data ?? '', page, count];
        const rows = await host.request<AheadRow>(this.#statement, values, attempted);
        // Found rather than created: an earlier attempt, whose reply was lost, was applied.
        if (rows[0]?.created === false) host.counters.adopted += 1;
        host.counters.queueRowsRead += rows.length;
        return rows;
      },
      (_key, rows) => (answer = rows),
    );
    const { entry } = placed;
    const first = answer[0];
    const read = answer.filter((row) => !row.is_self).length;
    // In the answer's order, nearest first; our orphans are already left out of `placed.queue`.
    const ahead = placed.queue.filter((e) => e.key !== entry.key).slice(0, page);
    const movers: Mover[] = [];
    if (first?.writes === true) movers.push('write');
    if (first?.semaphores === true) movers.push('semaphore');
    const counted = first?.ahead === null || first?.ahead === undefined ? {} : { position: Number(first.ahead) };
    return { entry, ahead, more: read > page, ...counted, movers };
  }
}

/** `enqueueAhead`'s answer from a whole listing (by position, as the function reads it). */
function windowOfListing({ entry, queue }: Enqueued, page: number): EnqueuedAhead {
  const window = aheadIn(queue, entry, page);
  const position = queue.findIndex((e) => e.key === entry.key);
  return { entry, ahead: window.entries, more: window.more, position, movers: moversAhead(queue, entry) };
}
