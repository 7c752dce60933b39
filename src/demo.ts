import type { Session } from '../recipes/contract.js';
import { connect, type ConnectOptions } from './connect.js';
import { ConfigStore, Ledger } from './demo/ledger.js';
import { type Command, CONFIG, JOB_MS, type Parent, type WorkerEvent } from './demo/protocol.js';
import { RemoteWorker } from './demo/remote.js';
import { Timeline } from './demo/timeline.js';
import { DemoWorker } from './demo/worker.js';
import { internalsOf } from './session.js';
import { resolveUrl } from './url.js';

export interface DemoOptions {
  readonly url: string;
  readonly workers: number;
  readonly ticks: number;
  /** The tick whose settling worker is cut off while it computes (0: nobody). */
  readonly cutAt: number;
  readonly sessionTimeoutMs: number;
  readonly ttlSeconds: number;
  readonly write: (line: string) => void;
}

export interface DemoResult {
  readonly settled: ReadonlyMap<number, { worker: string; token: bigint }>;
  readonly refused: readonly { worker: string; period: number; token: bigint; newest: bigint }[];
  readonly cut?: {
    readonly worker: string;
    readonly period: number;
    readonly lost?: string;
    readonly takenOverBy?: string;
  };
  readonly config: {
    readonly readersOverlapped: boolean;
    readonly lateReadersSaw: readonly number[];
    readonly written: number;
  };
  readonly violations: readonly string[];
}

/** A worker as the demo drives it, in this process (memory) or in its own (servers). */
interface Runner {
  readonly name: string;
  run(command: Command): Promise<void>;
  /** Cut the worker off: its session is expired (memory) or its process frozen until `resume`. */
  cut(): Promise<void>;
  resume(): void;
  close(): Promise<void>;
}

/**
 * The settlement scheduler: every tick every worker competes for the settlement lock; the first settles
 * the period, the others find it settled. One holder is cut off mid-job; then readers and a writer
 * share the configuration through a ReadWriteLock. Prints a timeline and a summary.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  // A backend whose store is in this process runs the workers here too; its cut is an expiry.
  const inProcess = resolveUrl(options.url).backend.inProcess;
  const connectOptions: ConnectOptions = inProcess
    ? {}
    : { sessionTimeoutMs: options.sessionTimeoutMs, ttlSeconds: options.ttlSeconds };
  const waitMs = Math.max(30_000, options.sessionTimeoutMs * 6);
  const ledger = new Ledger();
  const config = new ConfigStore();
  const timeline = new Timeline(options.write);
  const cutter = new Cutter(options, timeline);
  const parent: Parent = {
    isSettled: async (period) => ledger.isSettled(period),
    settle: async (period, worker, token) => ledger.settle(period, worker, BigInt(token)),
    readConfig: async () => config.version,
    writeConfig: async (version, token) => config.write(version, BigInt(token)),
    pause: (worker, period) => cutter.pause(worker, period),
    report: (event) => {
      timeline.record(event);
      cutter.observe(event);
    },
  };
  const observer = await connect(options.url, connectOptions);
  const runners: Runner[] = [];
  try {
    options.write(
      `baton demo on ${options.url}: ${options.workers} workers, ${options.ticks} settlement periods${inProcess ? '' : ', each worker in its own process'}\n\n`,
    );
    for (let i = 1; i <= options.workers; i += 1) {
      const name = `worker-${i}`;
      runners.push(
        inProcess
          ? localRunner(name, options.url, parent, waitMs, inProcess)
          : await remoteRunner(name, options.url, connectOptions, waitMs, parent),
      );
    }
    cutter.runners = runners;
    for (let period = 1; period <= options.ticks; period += 1) {
      timeline.note(`tick ${period}: every worker asks for the settlement lock`);
      await Promise.all(runners.map((runner) => runner.run({ type: 'tick', period })));
    }
    const configResult = await configPhase(runners, cutter.victim, observer, timeline);
    const violations = [...ledger.violations, ...cutter.violations, ...configResult.violations];
    for (let period = 1; period <= options.ticks; period += 1)
      if (!ledger.isSettled(period)) violations.push(`period ${period} never settled`);
    violations.push(...timeline.failures());
    if (!configResult.readersOverlapped) violations.push('the first two readers did not share the read lock');
    if (configResult.lateReadersSaw.some((version) => version !== config.version))
      violations.push('a reader queued behind the writer read an old configuration');
    timeline.summary(ledger, config, configResult, violations);
    return {
      settled: ledger.settledBy,
      refused: ledger.refused,
      ...(cutter.result() === undefined ? {} : { cut: cutter.result()! }),
      config: configResult,
      violations,
    };
  } finally {
    cutter.dispose();
    await Promise.allSettled(runners.map((runner) => runner.close()));
    await observer.close();
  }
}

function localRunner(
  name: string,
  url: string,
  parent: Parent,
  waitMs: number,
  store: { expire(session: Session): void },
): Runner {
  const worker = new DemoWorker(name, () => connect(url), parent, waitMs);
  return {
    name,
    run: (command) => worker.run(command),
    cut: async () => store.expire(await worker.session()),
    resume: () => undefined,
    close: () => worker.run({ type: 'close' }),
  };
}

async function remoteRunner(
  name: string,
  url: string,
  options: ConnectOptions,
  waitMs: number,
  parent: Parent,
): Promise<Runner> {
  const worker = new RemoteWorker(name, url, options, waitMs, parent);
  try {
    await worker.ready;
  } catch (error) {
    worker.kill();
    throw error;
  }
  return {
    name,
    run: (command) => worker.run(command),
    cut: async () => worker.freeze(true),
    resume: () => worker.freeze(false),
    close: async () => {
      // Bounded: a worker that does not close within its session timeout is ended.
      const timer = setTimeout(() => worker.kill(), waitMs);
      await Promise.race([worker.run({ type: 'close' }).then(() => worker.exited()), worker.exited()]);
      clearTimeout(timer);
    },
  };
}

/**
 * Cuts off the worker that takes the lock in tick `cutAt`, while it computes, and lets it go on once
 * another worker has settled that period: its late write then reaches the ledger with a stale token.
 */
class Cutter {
  runners: Runner[] = [];
  victim: string | undefined;
  readonly violations: string[] = [];
  #period = 0;
  #lost: string | undefined;
  #takenOverBy: string | undefined;
  #resumed: Promise<void> = Promise.resolve();
  #resume: () => void = () => undefined;
  #deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: DemoOptions,
    private readonly timeline: Timeline,
  ) {}

  observe(event: WorkerEvent): void {
    if (event.type === 'computing' && event.period === this.options.cutAt && this.victim === undefined) {
      this.#start(event.worker, event.period);
    } else if (event.type === 'lost' && event.worker === this.victim) {
      this.#lost = event.detail;
    } else if (
      event.type === 'settled' &&
      event.period === this.#period &&
      event.worker !== this.victim &&
      this.victim !== undefined
    ) {
      this.#takenOverBy = event.worker;
      this.#end();
    }
  }

  /** Lets a frozen worker go and stops the takeover timer (the demo is ending, maybe on an error). */
  dispose(): void {
    clearTimeout(this.#deadline);
    this.runners.find((runner) => runner.name === this.victim)?.resume();
    this.#resume();
  }

  pause(worker: string, period: number): Promise<void> {
    return worker === this.victim && period === this.#period ? this.#resumed : Promise.resolve();
  }

  result(): DemoResult['cut'] {
    if (this.victim === undefined) return undefined;
    return {
      worker: this.victim,
      period: this.#period,
      ...(this.#lost === undefined ? {} : { lost: this.#lost }),
      ...(this.#takenOverBy === undefined ? {} : { takenOverBy: this.#takenOverBy }),
    };
  }

  #start(worker: string, period: number): void {
    this.victim = worker;
    this.#period = period;
    this.#resumed = new Promise((resolve) => (this.#resume = resolve));
    const how =
      resolveUrl(this.options.url).backend.inProcess !== undefined
        ? 'its session is expired by the "server"'
        : 'its process is frozen (SIGSTOP), as in a long GC pause';
    this.timeline.note(`CUT OFF ${worker} while it computes period ${period}: ${how}`);
    void this.runners.find((runner) => runner.name === worker)?.cut();
    // Bounded: the server expires the frozen session after its timeout; the next worker must follow.
    const limit = Math.max(this.options.sessionTimeoutMs, this.options.ttlSeconds * 1_000) * 4 + JOB_MS * 10;
    this.#deadline = setTimeout(() => {
      this.violations.push(`nobody took over period ${period} within ${limit} ms of cutting off ${worker}`);
      this.#end();
    }, limit);
  }

  #end(): void {
    clearTimeout(this.#deadline);
    this.timeline.note(`${this.victim} resumes and finishes its job as if nothing happened`);
    this.runners.find((runner) => runner.name === this.victim)?.resume();
    this.#resume();
  }
}

/** Two readers hold the configuration, a writer queues, two more readers queue behind the writer. */
async function configPhase(
  runners: Runner[],
  victim: string | undefined,
  observer: Session,
  timeline: Timeline,
): Promise<DemoResult['config'] & { violations: string[] }> {
  const [writer, ...readers] = [
    ...runners.filter((r) => r.name !== victim),
    ...runners.filter((r) => r.name === victim),
  ];
  const early = readers.slice(0, 2);
  const late = readers.slice(2, 4);
  const queued = async (count: number): Promise<void> => {
    for (let i = 0; (await internalsOf(observer).backend.list(CONFIG)).length < count; i += 1) {
      if (i > 3_000) throw new Error(`the configuration queue never reached ${count} entries`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  timeline.note(
    'configuration: two readers read, a writer queues behind them, two more readers queue behind the writer',
  );
  const running = early.map((reader) => reader.run({ type: 'read', holdMs: 300 }));
  await queued(early.length);
  running.push(writer!.run({ type: 'write', holdMs: 100 }));
  await queued(early.length + 1);
  running.push(...late.map((reader) => reader.run({ type: 'read', holdMs: 50 })));
  await Promise.all(running);
  return timeline.configReport(
    writer!.name,
    early.map((r) => r.name),
    late.map((r) => r.name),
  );
}
