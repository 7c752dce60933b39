import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { LineProcess } from './line-process.js';

export const PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('./kazoo_peer.py', import.meta.url));

export type KazooRecipe = 'lock' | 'read' | 'write';

let installed: Promise<boolean> | undefined;

/** Whether Debian's python3-kazoo can be imported by /usr/bin/python3 (asked once). */
export function kazooInstalled(): Promise<boolean> {
  installed ??= existsSync(PYTHON)
    ? new Promise((resolve) => spawn(PYTHON, ['-c', 'import kazoo']).on('exit', (code) => resolve(code === 0)))
    : Promise.resolve(false);
  return installed;
}

/** Printed once per run where kazoo's figures would have been. */
export const KAZOO_MISSING = 'kazoo not installed (apt-get install python3-kazoo): its figures are left out';

/**
 * kazoo (Debian's python3-kazoo) as a peer in the same run: a child process with one KazooClient that
 * runs cycles or contends when asked and reports its timings, so that its blocks alternate with baton's.
 */
export class KazooPeer {
  private constructor(readonly process: LineProcess) {}

  /** Undefined when kazoo is not installed. */
  static async start(hosts: string, label = 'kazoo peer'): Promise<KazooPeer | undefined> {
    if (!(await kazooInstalled())) return undefined;
    return new KazooPeer(await new LineProcess(PYTHON, [SCRIPT, hosts], label).ready());
  }

  /** Runs `count` acquire+release cycles of one recipe; resolves with each cycle's milliseconds. */
  async cycles(recipe: KazooRecipe, count: number): Promise<number[]> {
    return (await this.process.ask(`${recipe} ${count}`)).split(' ').map(Number);
  }

  stop(): Promise<void> {
    return this.process.stop();
  }
}

/** The command line of a kazoo contender process (it answers `contend <ms>`, see kazoo_peer.py). */
export function kazooContender(hosts: string, index: number): LineProcess {
  return new LineProcess(PYTHON, [SCRIPT, hosts], `kazoo contender ${index}`);
}
