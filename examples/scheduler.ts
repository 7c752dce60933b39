// A job that must run once per period, on exactly one node, and that a node which lost its lock
// (a long pause, a partition) cannot complete late: the ledger refuses stale fencing tokens.
import { pathToFileURL } from 'node:url';

import { connect, FairMutex, LockTimeoutError, type Session } from 'baton-locks';

/** The protected resource. In SQL the token check is part of the write itself:
 *  UPDATE periods SET settled_by = $node, token = $token WHERE period = $period AND token < $token */
export interface Ledger {
  isSettled(period: number): Promise<boolean>;
  /** False when `token` is not above every token accepted before: a stale holder. */
  settle(period: number, node: string, token: bigint): Promise<boolean>;
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
        return (await ledger.settle(period, node, lock.fencingToken))
          ? `settled (token ${lock.fencingToken})`
          : 'refused as stale';
      },
      { timeoutMs: 10_000 },
    );
  } catch (error) {
    if (error instanceof LockTimeoutError) return 'gave up waiting';
    throw error;
  }
}

/** A ledger in memory, for trying the recipe out. */
export class MemoryLedger implements Ledger {
  readonly settledBy = new Map<number, string>();
  #lastToken = -1n;
  async isSettled(period: number): Promise<boolean> {
    return this.settledBy.has(period);
  }
  async settle(period: number, node: string, token: bigint): Promise<boolean> {
    if (token <= this.#lastToken || this.settledBy.has(period)) return false;
    this.#lastToken = token;
    this.settledBy.set(period, node);
    return true;
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
