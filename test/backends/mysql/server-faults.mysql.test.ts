import { connect, mysqlCounters, mysqlProbeOf, type MysqlView } from 'baton-locks/testing';
import mysql2 from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import type { LockHandle } from '../../../recipes/handle.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { lockNameOf } from '../../../src/backends/mysql/open.js';
import { connectionOptionsOf, mysqlFixtureOf, serverStateOf, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';
import { expectLateWriteRefused, useRegister, writeWhileHeld } from '../../harness/checkers/fenced-writes.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { MYSQL_DATABASE, type MysqlServer, startMysql } from '../../harness/servers/mysql.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually, settlesWithin, track } from '../../harness/wait.js';

/** Every entry row of the namespace, those of expired sessions too: after a fault, none may be left. */
async function rowsLeft(url: string, namespace: string): Promise<number> {
  return withMysql(url, async (connection) => {
    const [rows] = await connection.query('SELECT COUNT(*) AS n FROM baton_entries WHERE namespace = ?', [namespace]);
    return Number((rows as { n: number | string }[])[0]?.n);
  });
}

/** The server ids of each session's connections. */
function threadsOf(views: Record<string, MysqlView>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(views).map(([name, view]) => [
      name,
      { main: view.mainThreadId(), beat: view.beatThreadId(), waits: view.waitThreadIds() },
    ]),
  );
}

/** Whether the wake-up name of `held`'s entry is held by its session's main connection now. */
async function nameHeldByMain(url: string, session: Session, held: LockHandle): Promise<boolean> {
  const name = lockNameOf(MYSQL_DATABASE, entryOf(held).key);
  return withMysql(url, async (connection) => {
    const [rows] = await connection.query('SELECT IS_USED_LOCK(?) AS holder', [name]);
    const thread = (rows as { holder: number | string | null }[])[0]?.holder;
    return thread !== null && Number(thread) === mysqlProbeOf(session).view.mainThreadId();
  });
}

/** Records a session's states. */
function statesOf(session: Session): string[] {
  const states: string[] = [];
  session.on('state', (state) => states.push(state));
  return states;
}

/**
 * A MariaDB of the file's own, stopped by its PID and started again on the same port and data
 * directory under its sessions. It writes its log at every commit, so a crash loses nothing it
 * answered. The lease (15 s) outlives a restart (crash recovery on a loaded machine took 7 s): the sessions are suspended, then connected again; the
 * holder keeps its lock (its new main connection takes the entry's name again); the waiter keeps waiting.
 */
describe('MariaDB restarted under its sessions', () => {
  const LEASE_MS = 15_000;
  let server: MysqlServer | undefined;
  beforeAll(async () => {
    server = await startMysql({ durable: true });
  }, 240_000);
  afterAll(async () => {
    await server?.stop();
  });
  const scope = useScope(() => mysqlFixtureOf(server!.url, 'mysql (own server)', LEASE_MS));
  const register = useRegister();

  for (const [how, signal] of [
    ['a clean shutdown (SIGTERM)', 'SIGTERM'],
    ['a crash (SIGKILL: crash recovery at the restart)', 'SIGKILL'],
  ] as const) {
    it(`after ${how} the holder still holds, the waiter is granted only on its release, and no row is left`, async () => {
      const [holder, waiter] = [await scope.open(), await scope.open()];
      const [holderStates, waiterStates] = [statesOf(holder), statesOf(waiter)];
      // A step that hangs fails with its name and what the server was doing.
      const step = <T>(what: string, promise: Promise<T>): Promise<T> =>
        settlesWithin(what, promise, LEASE_MS * 2).catch(async (error: unknown) => {
          const threads = { holder: mysqlProbeOf(holder).view, waiter: mysqlProbeOf(waiter).view };
          const seen = `sessions' connections ${JSON.stringify(threadsOf(threads))}; ${await serverStateOf(server!.url)}`;
          throw new Error(`${String(error)} (${seen})`, { cause: error });
        });
      const held = await step('acquire', new FairMutex(holder, 'restart').acquire());
      await step('write while held', writeWhileHeld(register().url, held));
      const waiting = track(new FairMutex(waiter, 'restart').acquire({ timeoutMs: LEASE_MS * 5 }));
      await eventually('waiter queued', async () => (await backendOf(waiter).list('restart')).length === 2, LEASE_MS);
      const downAt = Date.now();
      await server!.kill(signal);
      await server!.start();
      const upAt = Date.now();
      await eventually(
        'both sessions suspended, then connected again',
        () =>
          holderStates.includes('suspended') &&
          waiterStates.includes('suspended') &&
          holder.state === 'connected' &&
          waiter.state === 'connected',
        LEASE_MS,
      ).catch((error: unknown) => {
        const seen = `holder ${holderStates.join(' > ')}, waiter ${waiterStates.join(' > ')}`;
        throw new Error(`${String(error)} (${seen}; the server was down ${upAt - downAt} ms)`, { cause: error });
      });
      expect([...holderStates, ...waiterStates]).not.toContain('lost');
      expect(held.signal.aborted).toBe(false);
      expect(await step('confirm', backendOf(holder).confirm(entryOf(held)))).toBe(true);
      // The holder's new main connection holds the entry's wake-up name again.
      await eventually("the entry's name held again", () => nameHeldByMain(server!.url, holder, held), LEASE_MS);
      expect(waiting.settled, 'nothing granted the waiter the lock meanwhile').toBe(false);
      await step('write while held, after the restart', writeWhileHeld(register().url, held));
      await step('release', held.release());
      const lock = await step("the waiter's grant", waiting.promise);
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
      await step("the next holder's write", writeWhileHeld(register().url, lock));
      await step('the late write', expectLateWriteRefused(register().url, held));
      await step("the next holder's release", lock.release());
      await step('close', Promise.all([holder.close(), waiter.close()]));
      expect(await step('rows left', rowsLeft(server!.url, scope.namespace))).toBe(0);
    }, 120_000);
  }

  /**
   * A restarted server numbers its connections from the start again: the id of a session's former main
   * connection may then name another client's connection. The session must not kill it when it takes
   * its names again. The session reaches the server through a proxy that refuses it until a bystander
   * connection holds that id.
   */
  it("after a restart, the session's former connection id, now another client's, is not killed", async () => {
    // Ids well above those the restart's own readiness checks use up.
    for (let i = 0; i < 30; i += 1) await withMysql(server!.url, () => Promise.resolve());
    const proxy = await TcpProxy.start({ port: server!.port });
    const bystanders: mysql2.Connection[] = [];
    try {
      const holder = await connect(
        server!.url.replace(`127.0.0.1:${server!.port}`, proxy.address) + `?namespace=${scope.namespace}`,
        {
          sessionTimeoutMs: LEASE_MS,
        },
      );
      const held = await new FairMutex(holder, 'reused').acquire();
      const former = mysqlProbeOf(holder).view.mainThreadId()!;
      proxy.refuse();
      await server!.kill('SIGTERM');
      await server!.start();
      let bystander: mysql2.Connection | undefined;
      while (bystander === undefined && bystanders.length <= former) {
        const connection = await mysql2.createConnection(connectionOptionsOf(server!.url));
        bystanders.push(connection);
        if (connection.threadId === former) bystander = connection;
      }
      expect(bystander, `a connection given the holder's former id ${former}`).toBeDefined();
      proxy.restore();
      await eventually(
        "the entry's name held again by the holder",
        () => nameHeldByMain(server!.url, holder, held),
        LEASE_MS,
      );
      const [rows] = await bystander!.query('SELECT CONNECTION_ID() AS id');
      expect(Number((rows as { id: number | string }[])[0]?.id), 'the bystander still connected').toBe(former);
      expect(held.held).toBe(true);
      await held.release();
      await holder.close();
    } finally {
      for (const connection of bystanders) connection.destroy();
      await proxy.close();
    }
  }, 120_000);

  it('a session whose lease runs out while the server is down is lost, its holder told before the server could grant anyone', async () => {
    const SHORT_MS = 1_000;
    const short = await scope.open({ sessionTimeoutMs: SHORT_MS });
    const other = await scope.open();
    const held = await new FairMutex(short, 'outage').acquire();
    await server!.kill('SIGTERM');
    try {
      // Nobody can be granted while the server is down: the holder is told before that is possible.
      await eventually('the holder told', () => held.signal.aborted, SHORT_MS * 2);
    } finally {
      await server!.start();
    }
    await eventually('the short session lost', () => short.state === 'lost', LEASE_MS);
    const lock = await new FairMutex(other, 'outage').acquire({ timeoutMs: LEASE_MS });
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
    await other.close();
    await short.close();
    expect(await rowsLeft(server!.url, scope.namespace)).toBe(0);
  }, 120_000);

  /**
   * baton sets its connections' own `wait_timeout` to the longest MySQL allows: a global one shorter
   * than the lease must not close the main connection (it holds the entries' names) nor the heartbeat's,
   * however long they are idle. The lease here is long enough (16 s) that both stay idle for several
   * times the server's 2 s between the hold checks and the renewals.
   */
  it('a server-wide wait_timeout of 2 s, shorter than the lease: a lock held past it is still held, on the same connections, and its waiter is woken by its name', async () => {
    const LONG_MS = 16_000;
    const before = await withMysql(server!.url, async (connection) => {
      const [rows] = await connection.query('SELECT @@GLOBAL.wait_timeout AS seconds');
      return Number((rows as { seconds: number | string }[])[0]?.seconds);
    });
    await withMysql(server!.url, (connection) => connection.query('SET GLOBAL wait_timeout = 2'));
    try {
      const [holder, waiter] = [
        await scope.open({ sessionTimeoutMs: LONG_MS }),
        await scope.open({ sessionTimeoutMs: LONG_MS }),
      ];
      const [holderStates, waiterStates] = [statesOf(holder), statesOf(waiter)];
      const view = mysqlProbeOf(holder).view;
      const threads = { main: view.mainThreadId(), beat: view.beatThreadId() };
      const held = await new FairMutex(holder, 'idle').acquire();
      const waiting = track(new FairMutex(waiter, 'idle').acquire({ timeoutMs: LONG_MS * 2 }));
      await eventually('waiter queued', async () => (await backendOf(waiter).list('idle')).length === 2, LONG_MS);
      // Held for half the lease: two renewals and three hold checks, each connection idle longer than 2 s between them.
      await new Promise((resolve) => setTimeout(resolve, LONG_MS / 2));
      expect([...holderStates, ...waiterStates], 'no connection was closed under the sessions').toEqual([]);
      expect({ main: view.mainThreadId(), beat: view.beatThreadId() }).toEqual(threads);
      expect(held.held).toBe(true);
      expect(await backendOf(holder).confirm(entryOf(held))).toBe(true);
      expect(waiting.settled).toBe(false);
      const notified = mysqlCounters.notifications;
      await held.release();
      const lock = await waiting.promise;
      expect(mysqlCounters.notifications, "woken by its blocker's name, not the backstop").toBeGreaterThan(notified);
      await lock.release();
      await Promise.all([holder.close(), waiter.close()]);
    } finally {
      await withMysql(server!.url, (connection) => connection.query(`SET GLOBAL wait_timeout = ${Math.trunc(before)}`));
    }
    expect(await rowsLeft(server!.url, scope.namespace)).toBe(0);
  }, 120_000);
});
