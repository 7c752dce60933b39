import { FairMutex } from '../recipes/mutex.js';
import { connect } from './connect.js';
import type { BatonSession } from './session.js';

export interface DemoOptions {
  readonly url: string;
  readonly workers: number;
  readonly rounds: number;
  readonly write: (line: string) => void;
}

/** The protected resource: it refuses any write whose fencing token is not above the last one it saw. */
class Ledger {
  lastToken = -1n;
  readonly batches: { worker: string; token: bigint }[] = [];
  refused = 0;

  settle(worker: string, token: bigint): boolean {
    if (token <= this.lastToken) {
      this.refused += 1;
      return false;
    }
    this.lastToken = token;
    this.batches.push({ worker, token });
    return true;
  }
}

interface WorkerStats {
  name: string;
  runs: number;
  waitedMs: number;
}

/**
 * A settlement scheduler: every worker has its own session and takes the same fair mutex in turn to
 * settle a batch into the ledger, which checks fencing tokens. Prints a timeline and a summary.
 */
export async function runDemo(options: DemoOptions): Promise<{ batches: number; refused: number }> {
  const { write } = options;
  const started = performance.now();
  const stamp = (): string => `+${(performance.now() - started).toFixed(0).padStart(5)}ms`;
  const ledger = new Ledger();
  const sessions: BatonSession[] = [];
  try {
    for (let i = 0; i < options.workers; i += 1) sessions.push(await connect(options.url, { sessionTimeoutMs: 10_000 }));
    write(`baton demo on ${options.url}: ${options.workers} workers, ${options.rounds} settlement rounds each\n`);
    const stats = await Promise.all(
      sessions.map(async (session, i) => {
        const stat: WorkerStats = { name: `worker-${i + 1}`, runs: 0, waitedMs: 0 };
        const mutex = new FairMutex(session, 'payments/settlement');
        for (let round = 0; round < options.rounds; round += 1) {
          const asked = performance.now();
          await mutex.withLock(
            async (lock) => {
              const waited = performance.now() - asked;
              stat.waitedMs += waited;
              stat.runs += 1;
              const accepted = ledger.settle(stat.name, lock.fencingToken);
              write(
                `${stamp()}  ${stat.name.padEnd(9)} holds payments/settlement  token ${lock.fencingToken}  waited ${waited.toFixed(1)} ms  ${accepted ? `settled batch #${ledger.batches.length}` : 'REFUSED by ledger'}\n`,
              );
              await new Promise((resolve) => setTimeout(resolve, 5));
            },
            { timeoutMs: 30_000 },
          );
        }
        return stat;
      }),
    );
    write('\nworker     batches  mean wait\n');
    for (const stat of stats) {
      write(`${stat.name.padEnd(9)}  ${String(stat.runs).padStart(7)}  ${(stat.waitedMs / Math.max(stat.runs, 1)).toFixed(1).padStart(6)} ms\n`);
    }
    write(`\nledger: ${ledger.batches.length} batches settled, ${ledger.refused} stale writes refused, tokens strictly increasing\n`);
    return { batches: ledger.batches.length, refused: ledger.refused };
  } finally {
    await Promise.allSettled(sessions.map((session) => session.close()));
  }
}
