import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('./kazoo_peer.py', import.meta.url));

export type KazooRecipe = 'lock' | 'read' | 'write';

/**
 * kazoo (Debian's python3-kazoo) as a peer in the same run: a child process that runs cycles when
 * asked and reports each cycle's time, so that its blocks alternate with baton's.
 */
export class KazooPeer {
  readonly #child: ChildProcessByStdio<Writable, Readable, null>;
  readonly #lines: Interface;
  readonly #pending: ((line: string) => void)[] = [];

  private constructor(child: ChildProcessByStdio<Writable, Readable, null>) {
    this.#child = child;
    this.#lines = createInterface({ input: child.stdout });
    this.#lines.on('line', (line) => this.#pending.shift()?.(line));
  }

  /** Undefined when kazoo is not installed (apt-get install python3-kazoo). */
  static async start(hosts: string): Promise<KazooPeer | undefined> {
    if (!existsSync(PYTHON)) return undefined;
    const probe = spawn(PYTHON, ['-c', 'import kazoo']);
    if ((await new Promise((resolve) => probe.on('exit', resolve))) !== 0) return undefined;
    const peer = new KazooPeer(spawn(PYTHON, [SCRIPT, hosts], { stdio: ['pipe', 'pipe', 'inherit'] }));
    const ready = await peer.#next();
    if (ready !== 'ready') throw new Error(`kazoo peer did not start: ${ready}`);
    return peer;
  }

  /** Runs `count` acquire+release cycles of one recipe; resolves with each cycle's milliseconds. */
  async cycles(recipe: KazooRecipe, count: number): Promise<number[]> {
    const answer = this.#next();
    this.#child.stdin.write(`${recipe} ${count}\n`);
    return (await answer).split(' ').map(Number);
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.#child.on('exit', resolve));
    this.#child.stdin.end('quit\n');
    await exited;
  }

  #next(): Promise<string> {
    return new Promise((resolve) => this.#pending.push(resolve));
  }
}
