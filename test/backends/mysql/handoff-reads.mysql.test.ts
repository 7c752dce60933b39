import { connect, mysqlCounters } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import type { LockHandle } from '../../../recipes/handle.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import { mysqlSessionRowOf } from '../../../src/backends/mysql/driver.js';
import { mysqlFixture, mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';
import { queueInOrder } from '../../harness/queue-in-order.js';
import { eventually, track } from '../../harness/wait.js';

/** A long lease: no backstop look or hold check of note while a queue drains. */
const LONG_LEASE = { sessionTimeoutMs: 20_000 };

/**
 * Rows a reader's wake reads: its own row and a first page of 16 ahead (17 asked, to know whether
 * there are more), then its own row and every entry ahead if the page held only reads.
 */
function readerWakeRows(ahead: number): number {
  return 1 + Math.min(ahead, 17) + (ahead > 16 ? 1 + ahead : 0);
}

/** The queue rows and whole listings counted so far. */
function reads(): { rows: number; listings: number } {
  return { rows: mysqlCounters.queueRowsRead, listings: mysqlCounters.wholeListings };
}

function readsSince(before: ReturnType<typeof reads>): ReturnType<typeof reads> {
  const now = reads();
  return { rows: now.rows - before.rows, listings: now.listings - before.listings };
}

describe('MySQL: a handoff reads only what the waiter decision needs (issue 37)', () => {
  const scope = useScope(mysqlFixture);

  const queued = (count: number): Promise<void> =>
    eventually(`${count} entries queued`, async () => (await scope.fixture.entries(scope.namespace)).length === count);

  const queueUp = (
    sessions: readonly Session[],
    count: number,
    already: number,
    acquire: (session: Session) => Promise<LockHandle>,
  ): Promise<Promise<LockHandle>[]> =>
    queueInOrder(sessions, count, already, async () => (await scope.fixture.entries(scope.namespace)).length, acquire);

  it('a mutex handoff behind 64 waiters reads its own row and no entry behind it, with no whole listing', async () => {
    const holderSession = await scope.open(LONG_LEASE);
    const sessions = [await scope.open(LONG_LEASE), await scope.open(LONG_LEASE)];
    const holder = await new FairMutex(holderSession, 'deep').acquire();
    const waits = await queueUp(sessions, 64, 1, (session) => new FairMutex(session, 'deep').acquire());
    const before = reads();
    await holder.release();
    for (const wait of waits) await (await wait).release();
    // A woken waiter, at the head, reads its own row; a whole listing at each wake would read the 64,
    // 63, ... waiters still queued (2,080 rows in all).
    const { rows, listings } = readsSince(before);
    expect(rows).toBeLessThanOrEqual(64 + 8);
    expect(listings).toBe(0);
  }, 120_000);

  it('64 readers woken behind a writer read back to the head, never the 16 writers queued behind them', async () => {
    const writerSession = await scope.open(LONG_LEASE);
    const sessions = [await scope.open(LONG_LEASE), await scope.open(LONG_LEASE)];
    const writer = await new ReadWriteLock(writerSession, 'readers').writeLock.acquire();
    const readers = await queueUp(sessions, 64, 1, (s) => new ReadWriteLock(s, 'readers').readLock.acquire());
    const writers = await queueUp(sessions, 16, 65, (s) => new ReadWriteLock(s, 'readers').writeLock.acquire());
    const before = reads();
    await writer.release();
    const held = await Promise.all(readers);
    const { rows, listings } = readsSince(before);
    let bound = 0;
    for (let ahead = 0; ahead < 64; ahead += 1) bound += readerWakeRows(ahead);
    // 2,926 rows; a whole listing at each wake reads the 64 readers and 16 writers, 5,120 rows.
    expect(rows).toBeLessThanOrEqual(bound);
    expect(listings).toBe(0);
    const tracked = writers.map((write) => track(write));
    for (const read of held) await read.release();
    for (const write of tracked) await (await write.promise).release();
  }, 120_000);

  it("an expired session's entry ahead is removed by the short read, and the waiter behind it granted", async () => {
    const holderSession = await scope.open(LONG_LEASE);
    const waiterSession = await scope.open();
    await new FairMutex(holderSession, 'expired').acquire();
    const waiting = track(new FairMutex(waiterSession, 'expired').acquire());
    await queued(2);
    const holderRow = mysqlSessionRowOf(holderSession.id);
    const before = reads();
    // The holder's lease runs out on the server while its connections stay up and hold its entry's name:
    // only the waiter's look at the row (its backstop) finds it, and only a sweep may skip the entry.
    await withMysql(mysqlUrl(), (connection) =>
      connection.query('UPDATE baton_sessions SET expires_at = SYSDATE(6) - INTERVAL 1 SECOND WHERE id = ?', [
        holderRow,
      ]),
    );
    const lock = await waiting.promise;
    const left = await withMysql(mysqlUrl(), async (connection) => {
      const [rows] = await connection.query('SELECT COUNT(*) AS n FROM baton_sessions WHERE id = ?', [holderRow]);
      return Number((rows as { n: number }[])[0]?.n);
    });
    expect(left).toBe(0);
    expect(readsSince(before).listings).toBe(0);
    await lock.release();
  }, 60_000);
});

describe('MySQL: the short read on a schema without its procedure (rolling deploys)', () => {
  it('lists whole where baton_list_before is missing; a client that may create the schema adds it', async () => {
    const url = new URL(mysqlUrl());
    const database = `baton_before_${process.pid}`;
    const admin = (text: string): Promise<unknown> => withMysql(mysqlUrl(), (connection) => connection.query(text));
    const procedures = async (): Promise<number> =>
      withMysql(mysqlUrl(), async (connection) => {
        const [rows] = await connection.query(
          "SELECT COUNT(*) AS n FROM information_schema.routines WHERE routine_schema = ? AND routine_name = 'baton_list_before'",
          [database],
        );
        return Number((rows as { n: number }[])[0]?.n);
      });
    await admin(`CREATE DATABASE ${database}`);
    const sessions: Session[] = [];
    try {
      url.pathname = `/${database}`;
      url.searchParams.set('namespace', 'rolling');
      const open = async (createSchema: boolean): Promise<Session> => {
        const session = await connect(url.toString(), { sessionTimeoutMs: 2_000, mysql: { createSchema } });
        sessions.push(session);
        return session;
      };
      const first = await open(true);
      expect(await procedures()).toBe(1);
      // As an older client of the same schema version made it (or an operator dropped it): the sessions
      // already open meet its absence at their next short read, a session that may not create it never adds it.
      await admin(`DROP PROCEDURE ${database}.baton_list_before`);
      const waiter = await open(false);
      const holder = await new FairMutex(first, 'rolling').acquire();
      const waiting = track(new FairMutex(waiter, 'rolling').acquire());
      await eventually('the waiter is queued', async () =>
        withMysql(mysqlUrl(), async (connection) => {
          const [rows] = await connection.query(`SELECT COUNT(*) AS n FROM ${database}.baton_entries`);
          return Number((rows as { n: number }[])[0]?.n) === 2;
        }),
      );
      expect(waiting.settled).toBe(false);
      const before = reads();
      await holder.release();
      await (await waiting.promise).release();
      expect(readsSince(before).listings).toBeGreaterThan(0);
      expect(await procedures()).toBe(0);
      // A client that may create the schema adds the missing procedure, without a version change.
      const newer = await open(true);
      expect(await procedures()).toBe(1);
      const version = await withMysql(mysqlUrl(), async (connection) => {
        const [rows] = await connection.query(`SELECT version FROM ${database}.baton_version`);
        return (rows as { version: number }[]).map((row) => Number(row.version));
      });
      expect(version).toEqual([2]);
      await (await new FairMutex(newer, 'rolling').acquire()).release();
    } finally {
      for (const session of sessions) await session.close();
      await admin(`DROP DATABASE ${database}`);
    }
  }, 60_000);
});
