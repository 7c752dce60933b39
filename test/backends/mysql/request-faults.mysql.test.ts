import { mysqlCounters } from 'baton-locks/testing';
import mysql2 from 'mysql2/promise';
import { describe, expect, it } from 'vitest';

import { BackendError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { lockNameOf } from '../../../src/backends/mysql/open.js';
import { connectionOptionsOf, mysqlFixture, mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';
import { layouts, throughProxy } from '../../harness/faults/layouts.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { eventually, track } from '../../harness/wait.js';

const mysqlLayout = () => layouts.find((layout) => layout.name === 'mysql')!;
const database = (): string => new URL(mysqlUrl()).pathname.slice(1);

/** The server's id of the connection that holds `name`, or null. */
async function holderOf(name: string): Promise<number | null> {
  return withMysql(mysqlUrl(), async (connection) => {
    const [rows] = await connection.query('SELECT IS_USED_LOCK(?) AS holder', [name]);
    const holder = (rows as { holder: number | string | null }[])[0]?.holder;
    return holder === null || holder === undefined ? null : Number(holder);
  });
}

/** Every entry row of the namespace, those of expired sessions too. */
async function rowsLeft(namespace: string): Promise<string[]> {
  return withMysql(mysqlUrl(), async (connection) => {
    const [rows] = await connection.query('SELECT `key` FROM baton_entries WHERE namespace = ? ORDER BY token', [
      namespace,
    ]);
    return (rows as { key: string }[]).map((row) => row.key);
  });
}

/**
 * The MySQL twins of the PostgreSQL request faults: a reply lost after the statement was applied (the
 * connection cut right after the request reached the server), and a statement failing part-way. The
 * call sent again must find what the first one did: never a second entry, never a name left held.
 */
describe('MySQL: replies lost, a statement failing part-way', () => {
  const scope = useScope(mysqlFixture);

  it('an enqueue whose reply is lost is adopted by the call sent again: one entry, and neither a row nor a name left after the release', async () => {
    const { proxy, session, close } = await throughProxy(mysqlLayout(), scope.namespace);
    try {
      const other = await scope.open();
      const adopted = mysqlCounters.adopted;
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes('baton_enqueue('));
      const held = await new FairMutex(session, 'lost-enqueue').acquire({ timeoutMs: scope.fixture.lossDeadlineMs });
      await cut;
      expect(mysqlCounters.adopted - adopted, 'the first attempt applied, its entry adopted').toBe(1);
      expect(await rowsLeft(scope.namespace)).toEqual([entryOf(held).key]);
      const name = lockNameOf(database(), entryOf(held).key);
      const waiting = track(new FairMutex(other, 'lost-enqueue').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
      await eventually('waiter queued', async () => (await backendOf(other).list('lost-enqueue')).length === 2);
      await held.release();
      expect(await holderOf(name), 'no name left held after the release').toBeNull();
      const lock = await waiting.promise;
      expect(await rowsLeft(scope.namespace)).toEqual([entryOf(lock).key]);
      await lock.release();
      expect(await rowsLeft(scope.namespace)).toEqual([]);
    } finally {
      await close();
    }
  });

  it('a withdraw whose reply is lost is sent again harmlessly: the entry is gone once, the waiter granted, the name free, the session carries on', async () => {
    const { proxy, session, close } = await throughProxy(mysqlLayout(), scope.namespace);
    try {
      const states: string[] = [];
      session.on('state', (state) => states.push(state));
      const other = await scope.open();
      const held = await new FairMutex(session, 'lost-withdraw').acquire();
      const waiting = track(new FairMutex(other, 'lost-withdraw').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
      await eventually('waiter queued', async () => (await backendOf(other).list('lost-withdraw')).length === 2);
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes('baton_withdraw('));
      const releasing = held.release();
      await cut;
      await releasing;
      const lock = await waiting.promise;
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(await rowsLeft(scope.namespace)).toEqual([entryOf(lock).key]);
      expect(await holderOf(lockNameOf(database(), entryOf(held).key))).toBeNull();
      expect(states).not.toContain('lost');
      await lock.release();
      // The session goes on: the same lock again, granted and released, nothing left.
      const again = await new FairMutex(session, 'lost-withdraw').acquire({ timeoutMs: scope.fixture.lossDeadlineMs });
      await again.release();
      expect(await rowsLeft(scope.namespace)).toEqual([]);
    } finally {
      await close();
    }
  });

  it('an enqueue whose statement fails after its insert leaves no row and no name held, fails the acquire, and the session carries on', async () => {
    const session = await scope.open();
    // A trigger of the test's own fails the procedure's statement after the entry's row is in, for one queue.
    const trigger = `fail_partway_${scope.namespace.replace(/\W/g, '_')}`;
    await withMysql(mysqlUrl(), (connection) =>
      connection.query(
        `CREATE TRIGGER ${trigger} AFTER INSERT ON baton_entries FOR EACH ROW` +
          ` BEGIN IF NEW.namespace = '${scope.namespace}' AND NEW.queue = 'partway' THEN` +
          ` SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'failed part-way'; END IF; END`,
      ),
    );
    let key: string | undefined;
    try {
      const before = await backendOf(session).list('partway');
      expect(before).toEqual([]);
      const failed = await new FairMutex(session, 'partway').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(failed).toBeInstanceOf(BackendError);
      expect((failed?.cause as { errno?: number } | undefined)?.errno).toBe(1644); // ER_SIGNAL_EXCEPTION
      expect(await rowsLeft(scope.namespace)).toEqual([]);
      expect(session.state).toBe('connected');
      const elsewhere = await new FairMutex(session, 'elsewhere').acquire();
      key = entryOf(elsewhere).key;
      await elsewhere.release();
    } finally {
      await withMysql(mysqlUrl(), (connection) => connection.query(`DROP TRIGGER ${trigger}`));
    }
    // The failed attempt's key came just before the one enqueued after it: its name was given back.
    const failedKey = key.replace(/\.(\d+)$/, (_, n: string) => `.${Number(n) - 1}`);
    expect(await holderOf(lockNameOf(database(), failedKey))).toBeNull();
    const lock = await new FairMutex(session, 'partway').acquire();
    await lock.release();
    expect(await rowsLeft(scope.namespace)).toEqual([]);
  });

  /**
   * mysql2 tells a connection's reset only to the statement under way on it, with no 'error' event: the
   * driver must still see the connection as broken and make it again, or every later statement fails.
   * The statement is held under way by a row lock the test takes on the queue's counter.
   */
  it("a reset of the session's connections while its enqueue waits for a row lock: the connection is made again and the lock granted", async () => {
    const { proxy, session, close } = await throughProxy(mysqlLayout(), scope.namespace);
    const blocker = await mysql2.createConnection(connectionOptionsOf(mysqlUrl()));
    try {
      await (await new FairMutex(session, 'reset').acquire()).release(); // the queue's counter row exists
      await blocker.query('BEGIN');
      await blocker.query('SELECT n FROM baton_counters WHERE namespace = ? AND queue = ? FOR UPDATE', [
        scope.namespace,
        'reset',
      ]);
      const acquiring = track(new FairMutex(session, 'reset').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
      await eventually('the enqueue waits for the row lock', () =>
        withMysql(mysqlUrl(), async (connection) => {
          const [rows] = await connection.query(
            "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE 'CALL baton_enqueue%'",
          );
          return Number((rows as { n: number | string }[])[0]?.n) > 0;
        }),
      );
      proxy.reset();
      await blocker.query('ROLLBACK');
      const lock = await acquiring.promise;
      // The heartbeat's connection was reset too: the session may be suspended until its next renewal,
      // which comes within the lease; it must then be connected, not lost.
      await eventually('the session is connected again', () => session.state === 'connected', session.timeoutMs);
      expect(lock.held).toBe(true);
      await lock.release();
      expect(await rowsLeft(scope.namespace)).toEqual([]);
    } finally {
      blocker.destroy();
      await close();
    }
  });
});
