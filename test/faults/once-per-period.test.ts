import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { FairMutex } from '../../recipes/mutex.js';
import { ONCE_RECORD } from '../../recipes/once.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { mysqlFixture } from '../harness/backends/mysql.js';
import { postgresFixture } from '../harness/backends/postgres.js';
import { useScope } from '../harness/backends/scope.js';
import { FencedRegister } from '../harness/checkers/fenced-register.js';
import { forkWorker } from '../harness/contention/run-contention.js';
import { makeTempDir, removeTempDir } from '../harness/servers/process.js';

const WORKER = fileURLToPath(new URL('../harness/workers/once-worker.ts', import.meta.url));
const WORKERS = 8;
const PERIODS = 12;
const PERIOD_MS = 1_500;
/** How long each run works: the window in which the test kills or pauses its holder. */
const WORK_MS = 300;
/** The period whose first holder is killed with SIGKILL, and the one whose first holder is paused. */
const KILLED_AT = 3;
const PAUSED_AT = 7;

/**
 * 8 processes call runOnce for the same 12 periods: every period must be run (and its fenced write
 * accepted) exactly once, also when a holder is SIGKILLed part-way and when one is SIGSTOPped and
 * resumed after its session expired and the period was run by another (its late write must be refused
 * and its record refused). Counted from outside: the workers' shared log and the fenced register.
 */
function oncePerPeriodSuite(getFixture: () => Fixture): void {
  describe(`runOnce across ${WORKERS} processes on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it(`runs each of ${PERIODS} periods exactly once, through a SIGKILL and a SIGSTOP part-way`, async () => {
      const fixture = scope.fixture;
      const dir = makeTempDir('baton-once-');
      const log = join(dir, 'log');
      const register = await FencedRegister.start();
      try {
        const args = [
          fixture.url(scope.namespace),
          JSON.stringify(fixture.options),
          'eod',
          String(PERIOD_MS),
          String(PERIODS),
          String(WORK_MS),
          log,
          register.url,
        ];
        const killed = { pid: 0, paused: 0 };
        const startedAt = performance.now();
        let ready = 0;
        const workers = Array.from({ length: WORKERS }, (_, n) =>
          forkWorker(WORKER, args, `once worker ${n}`, 120_000, (message, child) => {
            const m = message as { ready?: true; begin?: number; ran?: number };
            if (m.ready === true && ++ready === WORKERS) {
              console.log(`once: ${WORKERS} workers ready after ${Math.round(performance.now() - startedAt)} ms`);
              const first = Math.ceil((Date.now() + 500) / PERIOD_MS) * PERIOD_MS;
              for (const each of workers) each.child.send({ first });
            }
            if (m.begin === KILLED_AT && killed.pid === 0) {
              killed.pid = child.pid!;
              child.kill('SIGKILL');
            }
            if (m.begin === PAUSED_AT && killed.paused === 0) {
              killed.paused = child.pid!;
              child.kill('SIGSTOP');
            }
            // Another ran the paused holder's period: its session has expired; let it go on, late.
            if (m.ran === PAUSED_AT && killed.paused !== 0) process.kill(killed.paused, 'SIGCONT');
          }),
        );
        const ends = await Promise.allSettled(workers.map((worker) => worker.exited));
        console.log(`once: workers done after ${Math.round(performance.now() - startedAt)} ms`);
        const failed = ends.filter((end) => end.status === 'rejected');
        expect(failed.map((end) => String(end.reason))).toEqual([expect.stringContaining('SIGKILL')]);
        const lines = readFileSync(log, 'utf8').trim().split('\n');
        const count = (word: string, index: number): number =>
          lines.filter((text) => text.startsWith(`${word} ${index} `)).length;
        for (let index = 0; index < PERIODS; index += 1) {
          expect(count('ran', index), `period ${index} ran`).toBe(1);
          expect(count('did', index), `period ${index}'s accepted writes`).toBe(1);
        }
        // The killed holder began its period and never finished it; another ran it after its expiry.
        expect(lines).toContain(`begin ${KILLED_AT} ${killed.pid}`);
        expect(lines.filter((text) => text.endsWith(` ${killed.pid}`) && text.startsWith('ran '))).not.toContain(
          `ran ${KILLED_AT} ${killed.pid}`,
        );
        // The paused holder's late write was refused by the register and its record by the store.
        expect(count('refused', PAUSED_AT)).toBe(1);
        expect(lines).toContain(`lost ${PAUSED_AT} ${killed.paused}`);
        expect(register.refused).toBe(1);
        const session = await scope.open();
        await new FairMutex(session, 'eod').withLock(async (lock) => {
          expect(JSON.parse((await lock.guarded.get(ONCE_RECORD))!)).toMatchObject({ state: 'done' });
          await lock.guarded.delete(ONCE_RECORD);
        });
      } finally {
        await register.close();
        removeTempDir(dir);
      }
    }, 120_000);
  });
}

// The three backends' runs spend their time waiting for periods to pass, not on the CPU: side by side.
describe.concurrent('runOnce once per period', () => {
  oncePerPeriodSuite(() => etcdFixture('etcdStandalone'));
  oncePerPeriodSuite(postgresFixture);
  oncePerPeriodSuite(mysqlFixture);
});
