import { mysqlProbeOf } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { attemptMs } from '../../../src/backends/mysql/open.js';
import { mysqlFixture, mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';

/** A lease whose statement deadline (a third of it) is longer than the shortest lock wait MySQL allows (1 s). */
const SESSION_MS = 6_000;

describe('MySQL: a row lock wait ends before the statement deadline', () => {
  const scope = useScope(mysqlFixture);

  it('an enqueue behind a counter row locked past the deadline is answered by the server, and the main connection stays', async () => {
    const session = await scope.open({ sessionTimeoutMs: SESSION_MS });
    await (await new FairMutex(session, 'row-locked').acquire()).release(); // the counter row exists
    const main = mysqlProbeOf(session).view.mainThreadId();
    await withMysql(mysqlUrl(), async (connection) => {
      await connection.query('START TRANSACTION');
      await connection.query('SELECT n FROM baton_counters WHERE namespace = ? AND queue = ? FOR UPDATE', [
        scope.namespace,
        'row-locked',
      ]);
      const acquiring = new FairMutex(session, 'row-locked').acquire();
      // Held past one statement deadline, then let go: the enqueue was answered 1205 and sent again meanwhile.
      await new Promise((resolve) => setTimeout(resolve, attemptMs(SESSION_MS) * 1.5));
      await connection.query('COMMIT');
      await (await acquiring).release();
    });
    expect(mysqlProbeOf(session).view.mainThreadId()).toBe(main);
  });
});
