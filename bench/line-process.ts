import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

/**
 * A child process driven one line at a time over stdin/stdout: every peer and worker of the
 * benchmarks (kazoo in Python, baton contenders, the raw handoff floor) speaks this way, so that the
 * parent decides when each block runs and the children's timings stay out of its own event loop.
 * A child reads until stdin ends, so none outlives the run even if the parent dies.
 */
export class LineProcess {
  readonly #child: ChildProcessByStdio<Writable, Readable, null>;
  readonly #pending: { resolve(line: string): void; reject(error: Error): void }[] = [];
  /** Lines printed before anyone asked for them (a worker may report twice per command). */
  readonly #unread: string[] = [];
  readonly #exited: Promise<number | null>;
  #gone: Error | undefined;

  constructor(
    command: string,
    args: readonly string[],
    readonly label: string,
  ) {
    this.#child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    createInterface({ input: this.#child.stdout }).on('line', (line) => {
      const waiter = this.#pending.shift();
      if (waiter === undefined) this.#unread.push(line);
      else waiter.resolve(line);
    });
    this.#exited = new Promise((resolve) => {
      this.#child.on('exit', (code) => {
        // A child that dies mid-run fails whoever waits for its answer instead of hanging the run.
        this.#gone = new Error(`${label} exited (code ${code})`);
        for (const waiter of this.#pending.splice(0)) waiter.reject(this.#gone);
        resolve(code);
      });
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** The next line the child prints. */
  next(): Promise<string> {
    const line = this.#unread.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.#gone !== undefined) return Promise.reject(this.#gone);
    return new Promise((resolve, reject) => this.#pending.push({ resolve, reject }));
  }

  /** Sends one command and resolves with the child's one-line answer. */
  ask(command: string): Promise<string> {
    const answer = this.next();
    this.#child.stdin.write(`${command}\n`);
    return answer;
  }

  /** Waits for the child's first line and checks it says `ready`. */
  async ready(): Promise<this> {
    const line = await this.next();
    if (line !== 'ready') throw new Error(`${this.label} did not start: ${line}`);
    return this;
  }

  /** Asks the child to quit (it closes its session first); kills it if it has not gone within 10 s. */
  async stop(): Promise<void> {
    if (this.#gone !== undefined) return;
    this.#child.stdin.end('quit\n');
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 10_000);
    await this.#exited;
    clearTimeout(timer);
  }
}

/** Starts `count` children at once and waits until every one is ready; on failure stops them all. */
export async function startAll(make: (index: number) => LineProcess, count: number): Promise<LineProcess[]> {
  const children = Array.from({ length: count }, (_, index) => make(index));
  try {
    await Promise.all(children.map((child) => child.ready()));
    return children;
  } catch (error) {
    await stopAll(children);
    throw error;
  }
}

export async function stopAll(children: readonly LineProcess[]): Promise<void> {
  await Promise.all(children.map((child) => child.stop()));
}
