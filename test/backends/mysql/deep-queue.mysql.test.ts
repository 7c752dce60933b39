import { mysqlCounters } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { WAIT_POOL_CAP } from '../../../src/backends/mysql/driver.js';
import { mysqlFixture, mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';
import { eventually } from '../../harness/wait.js';

/** Three times the session's wait connections: most waits start without one. */
const WAITERS = 3 * WAIT_POOL_CAP;
/**
 * A long lease: the backstop's pace (a twelfth of it, each wait's `GET_LOCK` timeout) is slow next to
 * the queueing and the releases. At 20 s, a far wait's 1.7 s `GET_LOCK` once ran out while a loaded
 * machine queued the near waits, which then found its connection free and killed one wait fewer.
 */
const LONG_LEASE = { sessionTimeoutMs: 120_000 };

/** The name wake-ups, backstop wake-ups and `KILL QUERY`s counted so far. */
function wakes(): { names: number; backstop: number; kills: number } {
  return {
    names: mysqlCounters.notifications,
    backstop: mysqlCounters.backstopWakes,
    kills: mysqlCounters.killedWaits,
  };
}

function since(before: ReturnType<typeof wakes>): ReturnType<typeof wakes> {
  const now = wakes();
  return { names: now.names - before.names, backstop: now.backstop - before.backstop, kills: now.kills - before.kills };
}

/** Queues `count` waiters of `name` in `session`, one after another; each lets go as soon as it holds. */
async function queueWaiters(
  scope: ReturnType<typeof useScope>,
  session: Session,
  name: string,
  count: number,
): Promise<{ order: number[]; granted: Promise<unknown> }> {
  const entries = async (): Promise<number> => (await scope.fixture.entries(scope.namespace)).length;
  const start = await entries();
  const order: number[] = [];
  const granted: Promise<void>[] = [];
  for (let i = 0; i < count; i += 1) {
    granted.push(
      new FairMutex(session, name).acquire().then(async (lock) => {
        order.push(i);
        await lock.release();
      }),
    );
    // Queued one after another: the queue's order is the order of the loop.
    await eventually(`${name}: waiter ${i} queued`, async () => (await entries()) === start + i + 1);
  }
  return { order, granted: Promise.all(granted) };
}

/**
 * A queue deeper than a session's wait pool: the pool's connections go to the waits nearest the head,
 * and each one freed (its wait woken) goes at once to the next nearest. So every release of the chain
 * wakes its successor by the `GET_LOCK` name, none by the backstop's re-read.
 */
describe('MySQL: waits beyond the wait pool, in one session', () => {
  const scope = useScope(mysqlFixture);

  it(`a queue of ${WAITERS} waiters: all woken by their blockers' names, none by the backstop`, async () => {
    const holder = await scope.open();
    const waiters = await scope.open(LONG_LEASE);
    const held = await new FairMutex(holder, 'deep').acquire();
    const { order, granted } = await queueWaiters(scope, waiters, 'deep', WAITERS);
    const before = wakes();
    await held.release();
    await granted;
    expect(order).toEqual([...Array(WAITERS).keys()]);
    expect(since(before)).toMatchObject({ names: WAITERS, backstop: 0 });
  });

  it('waits nearer the head take the connections of farther ones that came first', async () => {
    const holder = await scope.open();
    const waiters = await scope.open(LONG_LEASE);
    await (await new FairMutex(holder, 'far').acquire()).release(); // the far queue's counter row exists
    // Its counter far ahead of the clock: the far queue's entries' orders are larger than the near queue's.
    await withMysql(mysqlUrl(), (connection) =>
      connection.query('UPDATE baton_counters SET n = 9000000000000000 WHERE namespace = ? AND queue = ?', [
        scope.namespace,
        'far',
      ]),
    );
    const far = await new FairMutex(holder, 'far').acquire();
    const near = await new FairMutex(holder, 'near').acquire();
    const farWaits = await queueWaiters(scope, waiters, 'far', WAIT_POOL_CAP);
    const before = wakes();
    const nearWaits = await queueWaiters(scope, waiters, 'near', WAIT_POOL_CAP);
    await near.release();
    await nearWaits.granted;
    // Each near wait took a far wait's connection (one KILL QUERY each), and was woken by its name.
    expect(since(before)).toEqual({ names: WAIT_POOL_CAP, backstop: 0, kills: WAIT_POOL_CAP });
    const then = wakes();
    await far.release();
    await farWaits.granted;
    expect(since(then)).toMatchObject({ names: WAIT_POOL_CAP, backstop: 0 });
  });
});
