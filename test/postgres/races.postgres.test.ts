import { describe, expect, it } from 'vitest';
import { postgresCounters } from 'baton-locks/testing';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { Semaphore } from '../../recipes/semaphore.js';
import { POSTGRES_SESSION_MS, postgresFixture } from '../support/backends/postgres.js';
import { useScope } from '../support/backends/scope.js';
import { backendOf, entryOf } from '../support/internals.js';
import { eventually, track } from '../support/wait.js';

/** The backstop's period with the contract sessions' lease. */
const BACKSTOP_MS = POSTGRES_SESSION_MS / 4;

/** Statements sent on the request connections (all sessions of this process) while `ms` pass. */
async function statementsDuring(ms: number): Promise<number> {
  const before = postgresCounters.statements;
  await new Promise((resolve) => setTimeout(resolve, ms));
  return postgresCounters.statements - before;
}

describe('PostgreSQL: a waiter behind an entry placed at another\'s place sends a bounded number of statements', () => {
  const scope = useScope(postgresFixture);

  it('a writer waiting behind a downgraded read: at most a look per backstop period, not a loop', async () => {
    const [owner, other] = [await scope.open(), await scope.open()];
    const rw = new ReadWriteLock(owner, 'spin');
    const write = await rw.writeLock.acquire();
    const waiting = track(new ReadWriteLock(other, 'spin').writeLock.acquire({ timeoutMs: 20_000 }));
    await eventually('writer queued', async () => (await backendOf(other).list('spin')).length === 2);
    const read = await rw.downgrade(write);
    await eventually('the writer waits for the read', async () => (await scope.fixture.watched(scope.namespace)).includes(entryOf(read).key));
    // Two backstop periods: a look each, and nothing else while the read is held.
    expect(await statementsDuring(2 * BACKSTOP_MS)).toBeLessThanOrEqual(6);
    expect(waiting.settled).toBe(false);
    await read.release();
    await (await waiting.promise).release();
  });

  it('a semaphore waiter behind a grant announced at its old place: at most a look per backstop period', async () => {
    const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
    const first = await new Semaphore(a, 'spin', { permits: 1 }).acquire();
    const second = track(new Semaphore(b, 'spin', { permits: 1 }).acquire({ timeoutMs: 20_000 }));
    await eventually('second queued', async () => (await backendOf(a).list('spin')).length === 2);
    const third = track(new Semaphore(c, 'spin', { permits: 1 }).acquire({ timeoutMs: 20_000 }));
    await eventually('third queued', async () => (await backendOf(a).list('spin')).length === 3);
    await first.release();
    const granted = await second.promise;
    await eventually('the third waits behind the announced grant', async () => (await scope.fixture.watched(scope.namespace)).includes(entryOf(granted).key));
    expect(await statementsDuring(2 * BACKSTOP_MS)).toBeLessThanOrEqual(6);
    expect(third.settled).toBe(false);
    await granted.release();
    await (await third.promise).release();
  });
});
