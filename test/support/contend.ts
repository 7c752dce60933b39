import { connect, type ConnectOptions } from '../../src/connect.js';
import { FairMutex } from '../../recipes/mutex.js';

/** The messages a contender exchanges with the external checker. */
export type ContendMessage = { type: 'enter'; worker: number; token: string } | { type: 'exit'; worker: number };

/**
 * One contender of the mutual-exclusion test: takes the lock `count` times and, while holding it,
 * reports enter and exit to the checker and waits for each to be acknowledged. Because exit is
 * acknowledged before the release is sent, any overlap the checker sees is a real double grant.
 */
export async function contend(
  url: string,
  options: ConnectOptions,
  name: string,
  worker: number,
  count: number,
  report: (message: ContendMessage) => Promise<void>,
): Promise<void> {
  const session = await connect(url, options);
  try {
    const mutex = new FairMutex(session, name);
    for (let i = 0; i < count; i += 1) {
      const lock = await mutex.acquire({ timeoutMs: 60_000 });
      await report({ type: 'enter', worker, token: lock.fencingToken.toString() });
      await report({ type: 'exit', worker });
      await lock.release();
    }
  } finally {
    await session.close();
  }
}

/** The external checker: at most one holder at a time, fencing tokens strictly increasing. */
export class ExclusionChecker {
  inside: number | undefined;
  lastToken = -1n;
  grants = 0;
  readonly violations: string[] = [];

  receive(message: ContendMessage): void {
    if (message.type === 'enter') {
      if (this.inside !== undefined) this.violations.push(`worker ${message.worker} entered while ${this.inside} held`);
      const token = BigInt(message.token);
      if (token <= this.lastToken) this.violations.push(`token ${token} after ${this.lastToken}`);
      this.lastToken = token;
      this.inside = message.worker;
      this.grants += 1;
    } else {
      if (this.inside !== message.worker) this.violations.push(`worker ${message.worker} exited but ${this.inside} held`);
      this.inside = undefined;
    }
  }
}
