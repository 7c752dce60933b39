import { createInterface } from 'node:readline';

import type { LockHandle } from '../recipes/handle.js';
import { FairMutex } from '../recipes/mutex.js';
import { connect } from '../src/connect.js';
import { backendOf } from '../test/harness/internals.js';
import { nowUs, sleep } from './clock.js';

/**
 * One side of baton's handoff measured as the raw handoff floor is: two processes and nothing else
 * running, a queue as deep as the contended case's. `node baton-handoff-worker.js <url> <lock>`, then
 * commands on stdin, one answer line each:
 *   hold        acquire the lock; answers `held`
 *   wait        acquire the lock; answers `granted <us>` once granted (kept until `release`)
 *   until <n>   answers `listed` once the queue holds n entries
 *   queue <n>   queue n more acquisitions, each released as soon as granted; answers `queued` at once
 *   release     release the held lock; answers `released <us>`, the time just before it was sent
 *   drain       answers `drained` once every queued acquisition was granted and released
 */
async function main(): Promise<void> {
  const [url, name] = process.argv.slice(2) as [string, string];
  const session = await connect(url, { sessionTimeoutMs: 10_000 });
  const mutex = new FairMutex(session, name);
  let held: LockHandle | undefined;
  let queued: Promise<void>[] = [];
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, argument] = line.split(' ');
    if (command === 'hold') {
      held = await mutex.acquire();
      say('held');
    } else if (command === 'wait') {
      // Answered when granted: the parent reads the answer after it has told the holder to release.
      void mutex.acquire().then((lock) => {
        const grantedUs = nowUs();
        held = lock;
        say(`granted ${grantedUs}`);
      });
    } else if (command === 'until') {
      while ((await backendOf(session).list(name)).length !== Number(argument)) await sleep(1);
      say('listed');
    } else if (command === 'queue') {
      queued = Array.from({ length: Number(argument) }, () => mutex.acquire().then((lock) => lock.release()));
      say('queued');
    } else if (command === 'release') {
      const sentUs = nowUs();
      await held!.release();
      held = undefined;
      say(`released ${sentUs}`);
    } else if (command === 'drain') {
      await Promise.all(queued);
      queued = [];
      say('drained');
    } else break;
  }
  await session.close();
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
