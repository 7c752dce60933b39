import type { Entry } from '../../../recipes/contract.js';
import { BackstopTimer } from '../backstop-timer.js';
import type { DriverCore } from '../core.js';
import { sameEntries } from '../waiters.js';
import type { Channels } from './channels.js';

/** What the backstop needs of the session's waits. */
export interface BackstopHost {
  readonly core: DriverCore;
  readonly channels: Channels;
  /** The entries waited on: each one's channel and row token. */
  watchedTokens(): (readonly [string, bigint])[];
  /** The observed queues, each with the listing its latest wait compares with. */
  observedSeen(): [string, readonly Entry[]][];
  queueChannel(queue: string): string;
  /** Which of these rows exist and belong to a live session. */
  live(tokens: readonly bigint[]): Promise<Set<bigint>>;
  list(queue: string): Promise<readonly Entry[]>;
}

/**
 * The backstop for a lost notification and for the entries of a session that expired without
 * anyone deleting them: while anything is waited for, every quarter of the session timeout, the
 * watched entries are looked up (one statement for all) and the observed queues listed.
 */
export class WatchBackstop {
  readonly #host: BackstopHost;
  readonly #timer: BackstopTimer;

  constructor(host: BackstopHost, everyMs: number) {
    this.#host = host;
    this.#timer = new BackstopTimer(
      { isOpen: () => host.core.isOpen, idle: () => host.channels.size === 0, check: () => this.check() },
      everyMs,
    );
  }

  /** Starts the checks, unless they run already or the session has ended. */
  ensure(): void {
    this.#timer.ensure();
  }

  stop(): void {
    this.#timer.stop();
  }

  /** Wakes the waiters of every watched entry that is gone and of every observed queue that changed. */
  async check(): Promise<void> {
    const watched = this.#host.watchedTokens();
    if (watched.length > 0) {
      const live = await this.#host.live(watched.map(([, token]) => token));
      for (const [channel, token] of watched) if (!live.has(token)) this.#host.channels.wake(channel);
    }
    // A queue-change wait is woken when the queue differs from what it last saw.
    for (const [queue, seen] of this.#host.observedSeen()) {
      if (!sameEntries(await this.#host.list(queue), seen)) this.#host.channels.wake(this.#host.queueChannel(queue));
    }
  }
}
