import type { Session } from '../../recipes/contract.js';
import type { LockHandle } from '../../recipes/handle.js';
import { FairMutex, type Lock } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { type Command, CONFIG, JOB_MS, type Parent, SETTLEMENT, type WorkerEvent } from './protocol.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One worker of the demo: its own session, the settlement job every tick, a reader or writer of the configuration. */
export class DemoWorker {
  #session: Session | undefined;

  constructor(
    readonly name: string,
    private readonly open: () => Promise<Session>,
    private readonly parent: Parent,
    private readonly waitMs: number,
  ) {}

  /** The session to work with: a lost one (cut off) is replaced, as a restarted worker would do. */
  async session(): Promise<Session> {
    if (this.#session !== undefined && this.#session.state !== 'lost') return this.#session;
    const replacing = this.#session !== undefined;
    if (replacing) await this.#session!.close();
    this.#session = await this.open();
    if (replacing) this.#report({ type: 'reconnected', detail: `new session ${this.#session.id}` });
    return this.#session;
  }

  async run(command: Command): Promise<void> {
    try {
      if (command.type === 'tick') await this.#settle(command.period);
      else if (command.type === 'read') await this.#read(command.holdMs);
      else if (command.type === 'write') await this.#write(command.holdMs);
      else await this.#session?.close();
    } catch (error) {
      this.#report({
        type: 'failed',
        detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
    }
  }

  /** The job: once per period; the token goes with the write, which the ledger checks. */
  async #settle(period: number): Promise<void> {
    await this.#holding(new FairMutex(await this.session(), SETTLEMENT), 'settlement', period, async (lock) => {
      if (await this.parent.isSettled(period)) return this.#report({ type: 'skipped', period, token: token(lock) });
      this.#report({ type: 'computing', period, token: token(lock) });
      await sleep(JOB_MS); // computing the batch
      await this.parent.pause(this.name, period);
      // Written as a careless job would: without checking lock.held first. The ledger's fence must catch it.
      const outcome = await this.parent.settle(period, this.name, token(lock));
      if (outcome.accepted) this.#report({ type: 'settled', period, token: token(lock) });
      else this.#report({ type: 'refused', period, token: token(lock), detail: outcome.refusal });
    });
  }

  async #read(holdMs: number): Promise<void> {
    await this.#holdingConfig('read', async (lock) => {
      this.#report({ type: 'read', version: await this.parent.readConfig(), token: token(lock) });
      await sleep(holdMs);
    });
  }

  async #write(holdMs: number): Promise<void> {
    await this.#holdingConfig('write', async (lock) => {
      const version = (await this.parent.readConfig()) + 1;
      await sleep(holdMs / 2); // a configuration written in two steps: readers must never see half of it
      if (await this.parent.writeConfig(version, token(lock)))
        this.#report({ type: 'wrote', version, token: token(lock) });
      await sleep(holdMs / 2);
    });
  }

  /** Runs `body` holding the configuration's read lock or its write lock (a new lock on this worker's session). */
  async #holdingConfig(side: 'read' | 'write', body: (lock: LockHandle) => Promise<void>): Promise<void> {
    const config = new ReadWriteLock(await this.session(), CONFIG);
    await this.#holding(side === 'read' ? config.readLock : config.writeLock, `${side} lock`, undefined, body);
  }

  /** Runs `body` holding `lock`, told on the timeline from the grant to the moment it lets go. */
  async #holding(
    lock: Lock,
    what: string,
    period: number | undefined,
    body: (lock: LockHandle) => Promise<void>,
  ): Promise<void> {
    const asked = performance.now();
    await lock.withLock(
      async (held) => {
        this.#granted(held, what, asked, period);
        await body(held);
        this.#report({ type: 'releasing', what, token: token(held) });
      },
      { timeoutMs: this.waitMs },
    );
  }

  #granted(lock: LockHandle, what: string, asked: number, period?: number): void {
    this.#report({
      type: 'granted',
      what,
      token: token(lock),
      waitedMs: performance.now() - asked,
      ...(period === undefined ? {} : { period }),
    });
    lock.signal.addEventListener('abort', () => {
      const reason = lock.signal.reason as Error;
      this.#report({
        type: 'lost',
        what,
        token: token(lock),
        detail: `${reason.name}: ${reason.message}; lock.held is ${lock.held}`,
      });
    });
  }

  #report(event: Omit<WorkerEvent, 'worker'>): void {
    this.parent.report({ worker: this.name, at: Date.now(), ...event });
  }
}

function token(lock: LockHandle): string {
  return lock.fencingToken.toString();
}
