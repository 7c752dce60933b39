import { describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { InvalidArgumentError, InvalidNameError, LockLostError, LockTimeoutError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ONCE_RECORD, type OnceRecord, periodOf, runOnce } from '../../../recipes/once.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { memoryFixture } from '../../harness/backends/memory.js';
import { mysqlFixture } from '../../harness/backends/mysql.js';
import { postgresFixture } from '../../harness/backends/postgres.js';
import { redisFixture } from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { entryOf } from '../../harness/internals.js';

const DAY = 86_400_000;
/** 2026-12-02T00:00:00.000Z and a moment into that day. */
const DAY_START = Date.UTC(2026, 11, 2);
const AT = DAY_START + 3_600_000;

/** The job's record as stored, read under the job's lock. */
async function recordOf(session: Session, job: string): Promise<OnceRecord | null> {
  const text = await new FairMutex(session, job).withLock((lock) => lock.guarded.get(ONCE_RECORD));
  return text === null ? null : (JSON.parse(text) as OnceRecord);
}

/** Deletes the job's record, so that the test leaves nothing on the store. */
async function clearRecord(session: Session, job: string): Promise<void> {
  await new FairMutex(session, job).withLock((lock) => lock.guarded.delete(ONCE_RECORD));
}

/** `runOnce` on every backend: once per period, the failure policies, a loss part-way, bad input, give-ups. */
function onceSuite(getFixture: () => Fixture): void {
  describe(`runOnce on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it('runs the first caller of a period and skips the others; the next period runs again, an earlier one not', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const ran: string[] = [];
      const work = ({ period }: { period: { name: string } }): string => {
        ran.push(period.name);
        return 'done';
      };
      const first = await runOnce(a, 'eod', { period: DAY, at: AT }, work);
      expect(first).toMatchObject({ outcome: 'ran', value: 'done', period: { name: '2026-12-02T00:00:00.000Z' } });
      const second = await runOnce(b, 'eod', { period: DAY, at: AT + 1_000 }, work);
      expect(second).toMatchObject({
        outcome: 'skipped',
        record: { period: '2026-12-02T00:00:00.000Z', state: 'done' },
      });
      expect(await runOnce(b, 'eod', { period: DAY, at: AT + DAY }, work)).toMatchObject({ outcome: 'ran' });
      // The day before was never run, but a later day is recorded: it is not run any more.
      expect(await runOnce(a, 'eod', { period: DAY, at: AT - DAY }, work)).toMatchObject({ outcome: 'skipped' });
      expect(ran).toEqual(['2026-12-02T00:00:00.000Z', '2026-12-03T00:00:00.000Z']);
      const record = await recordOf(a, 'eod');
      expect(record?.period).toBe('2026-12-03T00:00:00.000Z');
      await clearRecord(a, 'eod');
    });

    it('names periods by their start in UTC, aligned on the epoch', () => {
      expect(periodOf(AT, DAY)).toEqual({ name: '2026-12-02T00:00:00.000Z', start: DAY_START, end: DAY_START + DAY });
      expect(periodOf(DAY_START + 1_999, 1_000).name).toBe('2026-12-02T00:00:01.000Z');
    });

    it("onFailure 'retry' (default): a run that threw is not recorded, the next caller of the period runs it", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const boom = new Error('batch failed');
      await expect(runOnce(a, 'job', { period: DAY, at: AT }, () => Promise.reject(boom))).rejects.toBe(boom);
      expect(await recordOf(a, 'job')).toBeNull();
      expect(await runOnce(b, 'job', { period: DAY, at: AT }, () => 1)).toMatchObject({ outcome: 'ran', value: 1 });
      await clearRecord(a, 'job');
    });

    it("onFailure 'skip': the period is claimed before the work, so a failed run is not run again", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const options = { period: DAY, at: AT, onFailure: 'skip' } as const;
      await expect(runOnce(a, 'job', options, () => Promise.reject(new Error('x')))).rejects.toThrow('x');
      const again = await runOnce(b, 'job', options, () => 1);
      expect(again).toMatchObject({ outcome: 'skipped', record: { state: 'claimed' } });
      await clearRecord(a, 'job');
    });

    it('a holder whose entry was deleted part-way cannot record the period: LockLostError, the next caller runs it', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const cut = runOnce(a, 'job', { period: DAY, at: AT }, async ({ lock }) => {
        await scope.fixture.removeEntry(entryOf(lock).key);
        return 'late';
      });
      await expect(cut).rejects.toBeInstanceOf(LockLostError);
      expect(await recordOf(b, 'job')).toBeNull();
      expect(await runOnce(b, 'job', { period: DAY, at: AT }, () => 'again')).toMatchObject({ outcome: 'ran' });
      await clearRecord(b, 'job');
    });

    it('refuses bad input with typed errors before queueing', async () => {
      const session = await scope.open();
      const work = (): number => 1;
      const bad = [
        { period: 0 },
        { period: 1.5 },
        { period: 2 ** 49 },
        { period: '1000' },
        { period: DAY, onFailure: 'never' },
        { period: DAY, at: -1 },
        { period: DAY, timeoutMs: -1 },
        { period: DAY, signal: 'x' },
        { period: DAY, perod: 1 },
        null,
      ];
      for (const options of bad)
        await expect(runOnce(session, 'job', options as never, work)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(runOnce(session, 'job', { period: DAY }, 'work' as never)).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      await expect(runOnce(session, 'a//b', { period: DAY }, work)).rejects.toBeInstanceOf(InvalidNameError);
    });

    it('gives up the wait for the lock on timeout and on abort, withdrawing the entry', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'job').acquire();
      let ran = 0;
      const work = (): void => void (ran += 1);
      await expect(runOnce(b, 'job', { period: DAY, timeoutMs: 50 }, work)).rejects.toBeInstanceOf(LockTimeoutError);
      const stop = new AbortController();
      const waiting = runOnce(b, 'job', { period: DAY, signal: stop.signal }, work);
      stop.abort(new Error('stop'));
      await expect(waiting).rejects.toThrow('stop');
      expect(ran).toBe(0);
      await held.release();
    });
  });
}

onceSuite(memoryFixture);
onceSuite(() => zkFixture('zkStandalone'));
onceSuite(() => etcdFixture('etcdStandalone'));
onceSuite(postgresFixture);
onceSuite(mysqlFixture);
onceSuite(redisFixture);
