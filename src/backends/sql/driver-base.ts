import type { Abortable, Entry } from '../../../recipes/contract.js';
import type { DriverEvents } from '../../driver-port.js';
import type { DriverCore } from '../core.js';
import type { QueueRow } from './entry.js';
import type { KeepAlive } from './keepalive.js';
import type { OwnEntries } from './own-entries.js';

/** A connection (or pool of them) of a SQL session: closed with the session, dropped when it is lost. */
export interface SessionLink {
  close(): Promise<void>;
  destroy(): void;
}

/** How a SQL backend wakes its waiters (PostgreSQL: LISTEN; MySQL: GET_LOCK). */
export interface SqlWaits {
  waitGone(entry: Entry, signal: Abortable): Promise<void>;
  waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void>;
}

/**
 * What both SQL drivers do alike. A session is a row whose lease the server's clock times, an entry a
 * row it owns; a listing, a hold's check, the close and the abandon differ only in their statements and
 * connections, which each driver supplies below. The rest of the contract is each driver's own. The
 * parts both use (core, own entries, keep-alive, counters) are protected fields rather than `#private`
 * ones so that this class can reach them; drivers are internal, so no user sees them.
 */
export abstract class SqlDriverBase {
  /** None: only baton writes baton's tables. */
  readonly dialects: readonly string[] = [];
  abstract readonly timeoutMs: number;
  protected abstract readonly core: DriverCore;
  protected abstract readonly own: OwnEntries;
  protected abstract readonly waits: SqlWaits;
  protected abstract readonly keepAlive: KeepAlive;
  protected abstract readonly counters: { queueRowsRead: number };

  /** The session's connections: closed together at the close, dropped in this order when lost. */
  protected abstract links(): readonly SessionLink[];
  /** The queue's rows in queue order, on the main connection (sent again while it fails on the way). */
  protected abstract listRows(queue: string): Promise<QueueRow[]>;
  /** Whether the session still owns `entry`'s row (sent again while it fails on the way). */
  protected abstract ownsRow(entry: Entry): Promise<boolean>;
  /** Deletes the session's row, and its entries with it (their waiters are woken); sent once. */
  protected abstract deleteSessionRow(): Promise<unknown>;

  attach(events: DriverEvents): void {
    this.core.attach(events);
  }

  async list(queue: string): Promise<readonly Entry[]> {
    const rows = await this.listRows(queue);
    this.counters.queueRowsRead += rows.length;
    return this.own.listed(queue, rows);
  }

  waitGone(entry: Entry, signal: Abortable): Promise<void> {
    return this.waits.waitGone(entry, signal);
  }

  waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    return this.waits.waitChange(queue, seen, signal);
  }

  async confirm(entry: Entry): Promise<boolean> {
    if (await this.ownsRow(entry)) return true;
    await this.keepAlive.renew(); // our entry is gone: if the session went with it, it is lost now
    return false;
  }

  abandon(reason: Error): void {
    this.core.abandon(reason, () => this.dropLinks());
  }

  /** Drops every connection of the session at once, without a word to the server. */
  protected dropLinks(): void {
    for (const link of this.links()) link.destroy();
  }

  close(): Promise<void> {
    return this.core.close(this.timeoutMs, {
      onServer: () =>
        this.deleteSessionRow().then(
          () => undefined,
          () => undefined,
        ),
      disconnect: () => Promise.all(this.links().map((link) => link.close())).then(() => undefined),
    });
  }
}
