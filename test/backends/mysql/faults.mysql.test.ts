import { mysqlProbeOf } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { lockNameOf } from '../../../src/backends/mysql/open.js';
import { mysqlFixture, mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';
import { entryOf } from '../../harness/internals.js';
import { eventually, track } from '../../harness/wait.js';

async function kill(thread: number | undefined): Promise<void> {
  expect(thread).toBeTypeOf('number');
  await withMysql(mysqlUrl(), async (connection) => void (await connection.query(`KILL ${thread}`)));
}

async function holderOf(name: string): Promise<number | null> {
  return withMysql(mysqlUrl(), async (connection) => {
    const [rows] = await connection.query('SELECT IS_USED_LOCK(?) AS holder', [name]);
    const holder = (rows as { holder: number | string | null }[])[0]?.holder;
    return holder === null || holder === undefined ? null : Number(holder);
  });
}

describe('MySQL: a KILL of the session connections', () => {
  const scope = useScope(mysqlFixture);
  const database = (): string => new URL(mysqlUrl()).pathname.slice(1);

  it("a KILL of the main connection keeps the hold: the connection is made again and takes the entry's name again", async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'killed-main').acquire();
    const name = lockNameOf(database(), entryOf(held).key);
    const before = mysqlProbeOf(a).view.mainThreadId();
    await kill(before);
    await eventually('the name is held again by a new main connection', async () => {
      const now = mysqlProbeOf(a).view.mainThreadId();
      return now !== undefined && now !== before && (await holderOf(name)) === now;
    });
    expect(held.held).toBe(true);
    expect(held.signal.aborted).toBe(false);
    const waiting = track(new FairMutex(b, 'killed-main').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
    await held.release();
    await (await waiting.promise).release();
  });

  it('a KILL of the heartbeat connection suspends the session at most: the lease is renewed on a new one', async () => {
    const session = await scope.open();
    const held = await new FairMutex(session, 'killed-beat').acquire();
    const states: string[] = [];
    session.on('state', (state) => states.push(state));
    const before = mysqlProbeOf(session).view.beatThreadId();
    await kill(before);
    await eventually(
      'a new heartbeat connection',
      () => ![undefined, before].includes(mysqlProbeOf(session).view.beatThreadId()),
      scope.fixture.lossDeadlineMs,
    );
    await eventually('connected', () => session.state === 'connected', scope.fixture.lossDeadlineMs);
    expect(states.every((state) => state === 'suspended' || state === 'connected')).toBe(true);
    expect(held.held).toBe(true);
    await held.release();
  });
});
