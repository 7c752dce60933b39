import type { Ahead, Entry } from '../../../recipes/contract.js';
import { entriesOf, type QueueRow } from '../sql/entry.js';
import { serverErrno } from './failures.js';
import type { Link, Row } from './link.js';
import type { MysqlCounters } from './probe.js';
import { LIST_BEFORE_PROCEDURE, listBeforeStatement } from './schema.js';

/** The short read's statement (see `baton_list_before` in schema.ts). */
export const LIST_BEFORE_CALL = `CALL ${LIST_BEFORE_PROCEDURE}(?, ?, ?, ?)`;

/** MySQL's "PROCEDURE ... does not exist". */
const NO_SUCH_PROCEDURE = 1305;
/** MySQL's "PROCEDURE ... already exists": another client added it first. */
const PROCEDURE_EXISTS = 1304;
/**
 * Why the procedure may not be added, leaving the whole listing: the user's rights (no CREATE ROUTINE),
 * a server read-only for now (`read_only`, `super_read_only`, a replica).
 */
const MAY_NOT_ADD = new Set([1044, 1142, 1227, 1370, 1290, 1792, 1836, PROCEDURE_EXISTS]);

/**
 * Adds `baton_list_before` to a schema of the current version that lacks it (made by an older client),
 * unless the schema may not be created here. Only a CREATE: nothing an older client calls is dropped or
 * changed, and the version stays, so older clients keep using the schema. Refused (rights, read-only,
 * made meanwhile by another client), it is left to the fallback: the driver then lists the queue whole.
 */
export async function addListBefore(main: Link, create: boolean): Promise<void> {
  if (!create) return;
  const found = await main.rows(
    "SELECT 1 FROM information_schema.routines WHERE routine_schema = DATABASE() AND routine_type = 'PROCEDURE' AND routine_name = ?",
    [LIST_BEFORE_PROCEDURE],
  );
  if (found.length > 0) return;
  try {
    await main.query(listBeforeStatement());
  } catch (error) {
    const errno = serverErrno(error);
    if (errno === undefined || !MAY_NOT_ADD.has(errno)) throw error;
  }
}

interface AheadRow extends QueueRow {
  live: number | string;
  is_self: number | string;
}

/** What the short read needs of its driver. */
export interface ListBeforeHost {
  readonly namespace: string;
  readonly counters: MysqlCounters;
  /** A `CALL` on the main connection, retried as every request; its failures mapped. */
  call<R extends Row>(text: string, values: readonly unknown[]): Promise<R[]>;
  /** The whole listing (its sweep removes every expired entry of the queue). */
  list(queue: string): Promise<readonly Entry[]>;
  /** This session's orphans left out of (and deleted from) entries read. */
  sweepOrphans(entries: Entry[]): Entry[];
}

/**
 * `Backend.listBefore` on MySQL/MariaDB: one `CALL baton_list_before`, an index probe whose cost does not
 * grow with the entries queued behind ours. Where the procedure is missing (an older client's schema
 * this client may not extend), or its answer shows an entry whose lease ran out after its sweep, the
 * queue is listed whole and the same answer taken from that listing.
 */
export class ListBefore {
  readonly #host: ListBeforeHost;
  #missing = false;

  constructor(host: ListBeforeHost) {
    this.#host = host;
  }

  async read(queue: string, self: Entry, limit?: number): Promise<Ahead> {
    if (this.#missing) return this.#fromListing(queue, self, limit);
    let rows: AheadRow[];
    try {
      rows = await this.#host.call<AheadRow>(LIST_BEFORE_CALL, [this.#host.namespace, queue, self.key, limit ?? null]);
    } catch (error) {
      if (serverErrno((error as Error).cause) !== NO_SUCH_PROCEDURE) throw error;
      this.#missing = true;
      return this.#fromListing(queue, self, limit);
    }
    this.#host.counters.queueRowsRead += rows.length;
    if (rows.some((row) => Number(row.live) !== 1)) return this.#fromListing(queue, self, limit);
    const present = rows.some((row) => Number(row.is_self) === 1);
    const ahead = rows.filter((row) => Number(row.is_self) !== 1);
    const entries = this.#host.sweepOrphans(entriesOf(queue, ahead));
    const more = limit !== undefined && ahead.length > limit;
    return { present, entries: limit === undefined ? entries : entries.slice(0, limit), more };
  }

  /** The same answer from a whole listing (the fallback). */
  async #fromListing(queue: string, self: Entry, limit: number | undefined): Promise<Ahead> {
    const listed = await this.#host.list(queue);
    if (!listed.some((entry) => entry.key === self.key)) return { present: false, entries: [], more: false };
    const ahead = listed.filter((entry) => entry.order < self.order).reverse();
    const entries = limit === undefined ? ahead : ahead.slice(0, limit);
    return { present: true, entries, more: entries.length < ahead.length };
  }
}
