import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { forkWorker } from '../contention/run-contention.js';
import type { ContendEvent, ContendPlan, ContendStep, Interval } from './fault-contender.js';

const WORKER = fileURLToPath(new URL('../workers/fault-contender-worker.ts', import.meta.url));

type Report =
  | { type: 'ready' }
  | ContendEvent
  | { type: 'expired'; session?: string; error?: string }
  | { type: 'done'; sessions: number };

/** An acquire that timed out (see `ContendPlan.acquireTimeoutMs`). */
export type Stall = Extract<ContendEvent, { type: 'stall' }>;
/** A connect that failed (the contender tried again). */
export type ConnectFailure = Extract<ContendEvent, { type: 'connect-failed' }>;

export interface ContenderRun {
  /** Every hold reported so far, in the order the reports arrived. */
  readonly intervals: readonly Interval[];
  /** Every acquire that timed out so far. */
  readonly stalls: readonly Stall[];
  /** Every connect that failed so far. */
  readonly connectFailures: readonly ConnectFailure[];
  /** Asks every worker to stop after its current hold. */
  stop(): void;
  /** Settles once every worker has finished the run: the sessions they opened in all. */
  readonly done: Promise<{ sessions: number }>;
}

interface Running {
  readonly intervals: Interval[];
  readonly stalls: Stall[];
  readonly connectFailures: ConnectFailure[];
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
  /** Workers whose acquire resolved and whose hold has not been reported yet. */
  readonly #holding = new Set<number>();
  /** Per worker, who waits for the answer to its 'expire'. */
  readonly #expiring = new Map<number, { resolve(session: string | undefined): void; reject(error: Error): void }>();
  /** Per worker, the await its loop entered last and when: named when the worker dies. */
  readonly #steps = new Map<number, { step: ContendStep; at: number }>();

  private constructor(workers: number, limitMs: number) {
    // A worker that dies fails the run in progress (and close() reports it), naming where it was.
    this.#workers = Array.from({ length: workers }, (_, worker) => {
      const { child, exited } = forkWorker(WORKER, [], `contender ${worker}`, limitMs, (message) =>
        this.#receive(worker, message as Report),
      );
      return { child, exited: exited.catch((error: unknown) => Promise.reject(this.#withLastStep(worker, error))) };
    });
    for (const { exited } of this.#workers) exited.catch((error: unknown) => this.#running?.settle(error));
  }

  /** Starts `workers` processes and waits until each listens; none lives longer than `limitMs`. */
  static async start(workers: number, limitMs: number): Promise<ContenderPool> {
    const pool = new ContenderPool(workers, limitMs);
    await new Promise<void>((resolve, reject) => {
      pool.#onReady = resolve;
      Promise.race(pool.#workers.map((w) => w.exited)).then(
        () => reject(new Error('a contender exited before it was ready')),
        reject,
      );
    });
    return pool;
  }

  /** The workers that hold at the moment, as far as their reports tell (more than one only in a fault). */
  get holding(): readonly number[] {
    return [...this.#holding];
  }

  get size(): number {
    return this.#workers.length;
  }

  /**
   * Every worker contends on one lock as `plan` says (worker numbers 0 .. size-1), with what
   * `perWorker` returns for it on top (its own URL, say).
   */
  run(
    plan: Omit<ContendPlan, 'worker'>,
    perWorker: (worker: number) => Partial<ContendPlan> = () => ({}),
  ): ContenderRun {
    if (this.#running !== undefined) throw new Error('one run at a time');
    const intervals: Interval[] = [];
    const stalls: Stall[] = [];
    const connectFailures: ConnectFailure[] = [];
    const done = new Promise<{ sessions: number }>((resolve, reject) => {
      const running: Running = {
        intervals,
        stalls,
        connectFailures,
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
    this.#holding.clear();
    this.#workers.forEach(({ child }, worker) =>
      child.send({ type: 'run', plan: { ...plan, ...perWorker(worker), worker } }),
    );
    return { intervals, stalls, connectFailures, stop: () => this.#send({ type: 'stop' }), done };
  }

  /** While on, `worker`'s holds go on past their length until their signal aborts (a long job). */
  linger(worker: number, on: boolean): void {
    const { child } = this.#workers[worker]!;
    if (child.connected) child.send({ type: 'linger', on });
  }

  /**
   * Ends `worker`'s current session from the server side (the run's plan says how to reach the
   * servers). Resolves with the session's id, or undefined if it had none open at the moment.
   */
  expire(worker: number): Promise<string | undefined> {
    if (this.#expiring.has(worker)) throw new Error(`worker ${worker} is already expiring a session`);
    return new Promise((resolve, reject) => {
      this.#expiring.set(worker, { resolve, reject });
      this.#workers[worker]!.child.send({ type: 'expire' });
    });
  }

  /** Lets every worker end, and reports one that did not end well. */
  async close(): Promise<void> {
    this.#send({ type: 'exit' });
    const exits = await Promise.allSettled(this.#workers.map((w) => w.exited));
    for (const exit of exits) if (exit.status === 'rejected') throw exit.reason;
  }

  /** `error` with the await the worker's loop was last seen in, and for how long. */
  #withLastStep(worker: number, error: unknown): unknown {
    const last = this.#steps.get(worker);
    if (last === undefined || !(error instanceof Error)) return error;
    const seconds = ((performance.now() - last.at) / 1_000).toFixed(1);
    return new Error(`${error.message}; its last step: ${last.step}, entered ${seconds} s before`);
  }

  #send(command: object): void {
    for (const { child } of this.#workers) if (child.connected) child.send(command);
  }

  #receive(worker: number, report: Report): void {
    if (report.type === 'ready') {
      this.#ready += 1;
      if (this.#ready === this.#workers.length) this.#onReady?.();
      return;
    }
    if (report.type === 'expired') {
      const waiting = this.#expiring.get(worker);
      this.#expiring.delete(worker);
      if (report.error === undefined) waiting?.resolve(report.session);
      else waiting?.reject(new Error(`worker ${worker} could not expire its session: ${report.error}`));
      return;
    }
    if (report.type === 'step') {
      this.#steps.set(worker, { step: report.step, at: performance.now() });
      return;
    }
    const running = this.#running;
    if (running === undefined) return;
    if (report.type === 'granted') this.#holding.add(worker);
    else if (report.type === 'interval') {
      this.#holding.delete(worker);
      running.intervals.push(report.interval);
    } else if (report.type === 'stall') running.stalls.push(report);
    else if (report.type === 'connect-failed') running.connectFailures.push(report);
    else {
      running.sessions += report.sessions;
      running.pending -= 1;
      if (running.pending === 0) running.settle();
    }
  }
}
