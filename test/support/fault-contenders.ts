import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ContendPlan, Interval } from './fault-contend.js';
import { forkWorker } from './processes.js';

const WORKER = fileURLToPath(new URL('./fault-worker.ts', import.meta.url));

type Report = { type: 'ready' } | { type: 'interval'; interval: Interval } | { type: 'done'; sessions: number };

export interface ContenderRun {
  /** Every hold reported so far, in the order the reports arrived. */
  readonly intervals: readonly Interval[];
  /** Asks every worker to stop after its current hold. */
  stop(): void;
  /** Settles once every worker has finished the run: the sessions they opened in all. */
  readonly done: Promise<{ sessions: number }>;
}

interface Running {
  readonly intervals: Interval[];
  sessions: number;
  pending: number;
  settle(error?: unknown): void;
}

/**
 * Fault contenders (fault-contend.ts), each in its own process, started once and used for one run
 * after another: starting a Node process with TypeScript costs about a second of CPU, which a
 * 2-core machine should not pay again for every deployment under test.
 */
export class ContenderPool {
  readonly #workers: { child: ChildProcess; exited: Promise<void> }[];
  #ready = 0;
  #onReady: (() => void) | undefined;
  #running: Running | undefined;

  private constructor(workers: number, limitMs: number) {
    this.#workers = Array.from({ length: workers }, (_, worker) =>
      forkWorker(WORKER, [], `contender ${worker}`, limitMs, (message) => this.#receive(message as Report)),
    );
    // A worker that dies fails the run in progress (and close() reports it).
    for (const { exited } of this.#workers) exited.catch((error: unknown) => this.#running?.settle(error));
  }

  /** Starts `workers` processes and waits until each listens; none lives longer than `limitMs`. */
  static async start(workers: number, limitMs: number): Promise<ContenderPool> {
    const pool = new ContenderPool(workers, limitMs);
    await new Promise<void>((resolve, reject) => {
      pool.#onReady = resolve;
      Promise.race(pool.#workers.map((w) => w.exited)).then(() => reject(new Error('a contender exited before it was ready')), reject);
    });
    return pool;
  }

  get size(): number {
    return this.#workers.length;
  }

  /** Every worker contends on one lock as `plan` says (worker numbers 0 .. size-1). */
  run(plan: Omit<ContendPlan, 'worker'>): ContenderRun {
    if (this.#running !== undefined) throw new Error('one run at a time');
    const intervals: Interval[] = [];
    const done = new Promise<{ sessions: number }>((resolve, reject) => {
      const running: Running = {
        intervals,
        sessions: 0,
        pending: this.#workers.length,
        settle: (error) => {
          this.#running = undefined;
          if (error === undefined) resolve({ sessions: running.sessions });
          else reject(error);
        },
      };
      this.#running = running;
    });
    this.#workers.forEach(({ child }, worker) => child.send({ type: 'run', plan: { ...plan, worker } }));
    return { intervals, stop: () => this.#send({ type: 'stop' }), done };
  }

  /** Lets every worker end, and reports one that did not end well. */
  async close(): Promise<void> {
    this.#send({ type: 'exit' });
    const exits = await Promise.allSettled(this.#workers.map((w) => w.exited));
    for (const exit of exits) if (exit.status === 'rejected') throw exit.reason;
  }

  #send(command: object): void {
    for (const { child } of this.#workers) if (child.connected) child.send(command);
  }

  #receive(report: Report): void {
    if (report.type === 'ready') {
      this.#ready += 1;
      if (this.#ready === this.#workers.length) this.#onReady?.();
      return;
    }
    const running = this.#running;
    if (running === undefined) return;
    if (report.type === 'interval') running.intervals.push(report.interval);
    else {
      running.sessions += report.sessions;
      running.pending -= 1;
      if (running.pending === 0) running.settle();
    }
  }
}
