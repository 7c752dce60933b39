import { fileURLToPath } from 'node:url';

import { MultiLock } from '../../../recipes/multilock.js';
import { Semaphore } from '../../../recipes/semaphore.js';
import { connect, type ConnectOptions } from '../../../src/connect.js';
import { forkWorker } from './run-contention.js';

/**
 * The multi-process checks of Semaphore and MultiLock: each contender reports what it holds (units per
 * name) when it enters and before it releases, and waits for each report to be acknowledged, so that
 * any excess the checker counts is a real one.
 */
export type CountingMode = 'semaphore' | 'multilock';

export type CountMessage = { type: 'enter' | 'exit'; worker: number; units: Record<string, number> };

type Report = (message: CountMessage) => Promise<void>;

export interface CountingRun {
  readonly url: string;
  readonly options: ConnectOptions;
  readonly mode: CountingMode;
  /** The semaphore's name, or the prefix of the accounts' lock names. */
  readonly name: string;
  /** The semaphore's permits, or how many accounts there are. */
  readonly size: number;
  readonly workers: number;
  readonly count: number;
  readonly crossProcess: boolean;
}

/** A small deterministic generator per worker: the runs differ between workers, not between test runs. */
function random(seed: number): () => number {
  let state = seed * 2_654_435_761 + 1;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

/**
 * One contender. A semaphore contender takes 1 or 2 permits (at random) `count` times; a multilock
 * contender moves money between two different accounts picked at random, in either direction, `count`
 * times, naming the accounts in the order of the transfer (the MultiLock orders them itself).
 */
export async function contendCounting(run: CountingRun, worker: number, report: Report): Promise<void> {
  const session = await connect(run.url, run.options);
  const next = random(worker + 1);
  const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));
  try {
    for (let i = 0; i < run.count; i += 1) {
      if (run.mode === 'semaphore') {
        const count = Math.min(run.size, 1 + Math.floor(next() * 2));
        await new Semaphore(session, run.name, { permits: run.size }).withPermit(
          async () => {
            await report({ type: 'enter', worker, units: { [run.name]: count } });
            await pause();
            await report({ type: 'exit', worker, units: { [run.name]: count } });
          },
          { count, timeoutMs: 60_000 },
        );
      } else {
        const from = Math.floor(next() * run.size);
        const to = (from + 1 + Math.floor(next() * (run.size - 1))) % run.size;
        const accounts = [`${run.name}/${from}`, `${run.name}/${to}`];
        const units = Object.fromEntries(accounts.map((account) => [account, 1]));
        await new MultiLock(session, accounts).withLock(
          async () => {
            await report({ type: 'enter', worker, units });
            await report({ type: 'exit', worker, units });
          },
          { timeoutMs: 60_000 },
        );
      }
    }
  } finally {
    await session.close();
  }
}

/** The external checker: per name, the units held at once never exceed the limit. */
export class CountingChecker {
  readonly #held = new Map<string, number>();
  /** The most units held at once on any name. */
  peak = 0;
  grants = 0;
  readonly violations: string[] = [];

  constructor(private readonly limit: number) {}

  receive(message: CountMessage): void {
    if (message.type === 'enter') this.grants += 1;
    for (const [name, units] of Object.entries(message.units)) {
      const now = (this.#held.get(name) ?? 0) + (message.type === 'enter' ? units : -units);
      this.#held.set(name, now);
      if (now > this.limit)
        this.violations.push(
          `worker ${message.worker} entered "${name}" with ${units}: ${now} held at once, limit ${this.limit}`,
        );
      if (now < 0) this.violations.push(`worker ${message.worker} left "${name}" it did not hold`);
      this.peak = Math.max(this.peak, now);
    }
  }
}

const WORKER = fileURLToPath(new URL('../workers/counting-worker.ts', import.meta.url));

/** Runs the contenders, each in its own process (or, for memory://, its own session), against one checker. */
export async function runCounting(run: CountingRun): Promise<CountingChecker> {
  const checker = new CountingChecker(run.mode === 'semaphore' ? run.size : 1);
  const runs = Array.from({ length: run.workers }, (_, worker) => {
    if (!run.crossProcess) {
      return contendCounting(run, worker, async (message) => {
        await new Promise((resolve) => setImmediate(resolve));
        checker.receive(message);
      });
    }
    return forkWorker(
      WORKER,
      [JSON.stringify(run), String(worker)],
      `${run.mode} contender ${worker}`,
      150_000,
      (message, child) => {
        checker.receive(message as CountMessage);
        child.send('ok');
      },
    ).exited;
  });
  await Promise.all(runs);
  return checker;
}
