import { mysqlCounters, mysqlProbeOf } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { LockTimeoutError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { lockNameOf } from '../../../src/backends/mysql/open.js';
import { mysqlFixture, mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';
import { entryOf } from '../../harness/internals.js';
import { MYSQL_DATABASE } from '../../harness/servers/mysql.js';
import { eventually, track } from '../../harness/wait.js';

/** The server's id of the connection that holds `name`, or null. */
async function holderOf(name: string): Promise<number | null> {
  return withMysql(mysqlUrl(), async (connection) => {
    const [rows] = await connection.query('SELECT IS_USED_LOCK(?) AS holder', [name]);
    const holder = (rows as { holder: number | string | null }[])[0]?.holder;
    return holder === null || holder === undefined ? null : Number(holder);
  });
}

/** The database of the harness's URL (BATON_TEST_MYSQL may name another). */
function database(): string {
  return new URL(mysqlUrl()).pathname.slice(1) || MYSQL_DATABASE;
}

describe('MySQL: the requests of a cycle, the wake-up names, and waits given up', () => {
  const scope = useScope(mysqlFixture);

  it('an uncontended acquire and release is two statements (the enqueue procedure, the withdraw procedure)', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'two');
    await (await mutex.acquire()).release(); // the first cycle as every later one
    const before = mysqlCounters.statements;
    for (let i = 0; i < 10; i += 1) await (await mutex.acquire()).release();
    expect((mysqlCounters.statements - before) / 10).toBe(2);
  });

  it("holds each entry's hashed GET_LOCK name on the session's main connection until the release", async () => {
    const session = await scope.open();
    const held = await new FairMutex(session, 'named/lock.with-a-long-name'.padEnd(200, 'x')).acquire();
    const name = lockNameOf(database(), entryOf(held).key);
    expect(name.length).toBeLessThanOrEqual(64);
    expect(name).toMatch(/^baton\.[0-9a-f]{40}$/);
    expect(await holderOf(name)).toBe(mysqlProbeOf(session).view.mainThreadId());
    await held.release();
    expect(await holderOf(name)).toBeNull();
  });

  it("wakes a waiter by its blocker's name, not by a re-read", async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'woken').acquire();
    const waiting = track(new FairMutex(b, 'woken').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
    await eventually('the waiter blocks in GET_LOCK', async () => mysqlProbeOf(b).view.waitThreadIds().length === 1);
    const before = { ...mysqlCounters };
    await held.release();
    await (await waiting.promise).release();
    expect(mysqlCounters.notifications - before.notifications).toBe(1);
    expect(mysqlCounters.backstopWakes - before.backstopWakes).toBe(0);
  });

  it('ends a wait given up with KILL QUERY on its wait connection', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'given-up').acquire();
    const killed = mysqlCounters.killedWaits;
    const error = await new FairMutex(b, 'given-up').acquire({ timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(mysqlCounters.killedWaits).toBe(killed + 1);
    const [thread] = mysqlProbeOf(b).view.waitThreadIds();
    // The wait connection no longer waits for the name (the backstop's own wait would last seconds).
    await eventually('the wait connection is idle', async () =>
      withMysql(mysqlUrl(), async (connection) => {
        const [rows] = await connection.query(
          "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE id = ? AND info LIKE '%GET_LOCK%'",
          [thread],
        );
        return Number((rows as { n: number }[])[0]?.n) === 0;
      }),
    );
    await held.release();
  });
});
