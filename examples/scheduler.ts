// A job that must run once per period, on exactly one node, and that a node which lost its lock
// (a long pause, a partition) cannot complete late: the ledger's fence refuses stale fencing tokens.
import { pathToFileURL } from 'node:url';

import { connect, FairMutex, LockTimeoutError, type Session, StaleTokenError } from 'baton-locks';
import { fencedWrite, MemoryCasStore } from 'baton-locks/fence';

/** The protected resource. On PostgreSQL the fence is one call in the write's own transaction:
 *  await new PostgresFence().transaction(client, 'payments/ledger', token, (c) => c.query('INSERT INTO periods ...')) */
export interface Ledger {
  isSettled(period: number): Promise<boolean>;
  /** Rejects with `StaleTokenError` when `token` is below a token the ledger accepted: a stale holder. */
  settle(period: number, node: string, token: bigint): Promise<void>;
}

/** Every node calls this at every tick; the first to get the lock settles the period. */
export async function runPeriod(session: Session, ledger: Ledger, node: string, period: number): Promise<string> {
  const mutex = new FairMutex(session, 'payments/settlement');
  try {
    return await mutex.withLock(
      async (lock) => {
        if (await ledger.isSettled(period)) return 'already settled';
        // ... compute the batch here, passing lock.signal to whatever can be cancelled ...
        if (!lock.held) return 'lock lost: not writing';
        // Even a holder that checked lock.held may be paused right here; the ledger's fence decides.
        await ledger.settle(period, node, lock.fencingToken);
        return `settled (token ${lock.fencingToken})`;
      },
      { timeoutMs: 10_000 },
    );
  } catch (error) {
    if (error instanceof LockTimeoutError) return 'gave up waiting';
    if (error instanceof StaleTokenError) return `refused as stale (the ledger has seen token ${error.mark})`;
    throw error;
  }
}

/**
 * A ledger in memory, for trying the recipe out: one record of a compare-and-set store, its value the
 * settled periods and its mark the highest token accepted, written together by the fence.
 */
export class MemoryLedger implements Ledger {
  readonly #store = new MemoryCasStore<ReadonlyMap<number, string>>();
  get settledBy(): ReadonlyMap<number, string> {
    return [...this.#store.entries()][0]?.[1].value ?? new Map();
  }
  async isSettled(period: number): Promise<boolean> {
    return this.settledBy.has(period);
  }
  async settle(period: number, node: string, token: bigint): Promise<void> {
    await fencedWrite(this.#store, 'payments/ledger', token, (settled = new Map()) =>
      settled.has(period) ? settled : new Map([...settled, [period, node]]),
    );
  }
}

/** Three nodes, three periods: each period is settled once. */
export async function main(url: string, log = console.log): Promise<MemoryLedger> {
  const ledger = new MemoryLedger();
  const nodes = await Promise.all(
    ['node-a', 'node-b', 'node-c'].map(async (name) => ({ name, session: await connect(url) })),
  );
  try {
    for (const period of [1, 2, 3]) {
      const outcomes = await Promise.all(nodes.map(({ name, session }) => runPeriod(session, ledger, name, period)));
      nodes.forEach(({ name }, i) => log(`period ${period}  ${name}: ${outcomes[i]}`));
    }
    return ledger;
  } finally {
    await Promise.all(nodes.map(({ session }) => session.close()));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main(process.argv[2] ?? 'memory://example');
