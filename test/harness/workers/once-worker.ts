import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

import { LockLostError, SessionLostError } from '../../../recipes/errors.js';
import { runOnce } from '../../../recipes/once.js';
import { connect, type ConnectOptions } from '../../../src/connect.js';
import { writeFenced } from '../checkers/fenced-register.js';

/**
 * Child-process side of the once-per-period test. argv: url options-json job period-ms first-period-start
 * periods work-ms log-file register-url. Calls runOnce for each period in turn (waiting for its start by
 * this process's clock, from the first period's start the parent sends once every worker said `ready`) and appends what happened to the log, one line per event:
 * `begin <period> <pid>`, `did <period> <token>` (the fenced register took the work's write),
 * `refused <period> <token>`, `ran <period> <pid>`, `skipped <period> <pid>`, `lost <period> <pid>`.
 * Tells the parent `{ ready: true }`, `{ begin: period }` and `{ ran: period }` over IPC. Exits once
 * it lost its lock or session.
 */
const [url = '', options = '{}', job = '', period = '0', periods = '0', workMs = '0', log = '', register = ''] =
  process.argv.slice(2);
const periodMs = Number(period);
const line = (text: string): void => appendFileSync(log, `${text}\n`);

/** The first period's start (ms since the epoch), from the parent. */
function firstPeriod(): Promise<number> {
  return new Promise((resolve) => {
    process.once('message', (message: { first: number }) => resolve(message.first));
    process.send?.({ ready: true });
  });
}

async function main(): Promise<void> {
  const session = await connect(url, JSON.parse(options) as ConnectOptions);
  let index = 0;
  try {
    const first = await firstPeriod();
    for (; index < Number(periods); index += 1) {
      const at = first + index * periodMs;
      if (Date.now() < at) await sleep(at - Date.now());
      const result = await runOnce(session, job, { period: periodMs, at }, async ({ lock }) => {
        line(`begin ${index} ${process.pid}`);
        process.send?.({ begin: index });
        await sleep(Number(workMs));
        const outcome = await writeFenced(register, lock.fencingToken);
        line(`${outcome.accepted ? 'did' : 'refused'} ${index} ${lock.fencingToken}`);
      });
      line(`${result.outcome} ${index} ${process.pid}`);
      if (result.outcome === 'ran') process.send?.({ ran: index });
    }
  } catch (error) {
    if (!(error instanceof LockLostError || error instanceof SessionLostError)) throw error;
    line(`lost ${index} ${process.pid}`);
  } finally {
    await session.close().catch(() => undefined);
  }
}

main().then(
  () => process.disconnect(),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
