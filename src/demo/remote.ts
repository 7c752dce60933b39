import { type ChildProcess, fork } from 'node:child_process';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { ConnectOptions } from '../connect.js';
import type { FromChild, ToChild } from './child.js';
import type { Command, Parent } from './protocol.js';

/** Every worker process not yet ended: a demo that exits (also on Ctrl-C) ends them, frozen ones included. */
const living = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of living) {
    child.kill('SIGCONT'); // a stopped process does not act on other signals until continued
    child.kill('SIGKILL');
  }
});

/** A worker in its own process, driven like the in-process one. */
export class RemoteWorker {
  readonly #child: ChildProcess;
  readonly #done = new Map<number, () => void>();
  #nextId = 0;
  readonly ready: Promise<void>;

  constructor(name: string, url: string, options: ConnectOptions, waitMs: number, parent: Parent) {
    // The same file kind as this one: .ts under tsx (npm run demo), .js from the built package.
    const here = fileURLToPath(import.meta.url);
    const script = here.replace(/remote(\.[jt]s)$/, 'child$1');
    const execArgv = extname(here) === '.ts' ? ['--import', 'tsx'] : [];
    this.#child = fork(script, [name, url, JSON.stringify(options), String(waitMs)], {
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    living.add(this.#child);
    this.#child.once('exit', () => living.delete(this.#child));
    let markReady: () => void = () => undefined;
    let failReady: (error: Error) => void = () => undefined;
    this.ready = new Promise((resolve, reject) => ((markReady = resolve), (failReady = reject)));
    this.#child.once('exit', (code, signal) => {
      failReady(new Error(`demo worker ${name} exited with code ${code} before it was ready`));
      // Whatever it was doing will never be done: the demo goes on, and the crash is on its timeline.
      if (this.#done.size > 0)
        parent.report({ worker: name, type: 'failed', detail: `the process exited (code ${code}, signal ${signal})` });
      for (const done of this.#done.values()) done();
      this.#done.clear();
    });
    this.#child.on('message', (message: FromChild) => {
      if (message.kind === 'event') {
        if (message.event.type === 'reconnected' && message.event.detail === 'ready') markReady();
        else parent.report(message.event);
      } else if (message.kind === 'done') {
        this.#done.get(message.id)?.();
        this.#done.delete(message.id);
      } else {
        const method = parent[message.method] as (...args: unknown[]) => Promise<unknown>;
        void method.apply(parent, message.args).then((value) => this.#send({ kind: 'reply', id: message.id, value }));
      }
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  run(command: Command): Promise<void> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#done.set(id, resolve);
      this.#send({ kind: 'command', id, command });
    });
  }

  /** A freeze the process cannot see coming: a long GC pause, a stopped VM. */
  freeze(frozen: boolean): void {
    this.#child.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
  }

  /** Ends the process if it has not ended by itself (the demo's last resort on an error). */
  kill(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) {
      this.#child.kill('SIGCONT');
      this.#child.kill('SIGKILL');
    }
  }

  exited(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => this.#child.once('exit', () => resolve()));
  }

  #send(message: ToChild): void {
    if (this.#child.connected) this.#child.send(message);
  }
}
