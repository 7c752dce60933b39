import { randomUUID } from 'node:crypto';

import { postgresCounters, postgresProbeOf } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { BackendError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { postgresFixtureOf, postgresUrl, withPostgres } from '../../harness/backends/postgres.js';
import { useScope } from '../../harness/backends/scope.js';
import { expectLateWriteRefused, useRegister, writeWhileHeld } from '../../harness/checkers/fenced-writes.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { type PgServer, startPostgres } from '../../harness/servers/postgres.js';
import { eventually, track } from '../../harness/wait.js';

/** Every row of the namespace, those of expired sessions too: after a fault, none may be left. */
async function rowsLeft(url: string, schema: string, namespace: string): Promise<number> {
  return withPostgres(url, async (client) =>
    Number(
      (await client.query(`SELECT count(*) AS n FROM ${schema}.entries WHERE namespace = $1`, [namespace])).rows[0].n,
    ),
  );
}

/** Records a session's states. */
function statesOf(session: Session): string[] {
  const states: string[] = [];
  session.on('state', (state) => states.push(state));
  return states;
}

/**
 * A server of the file's own, restarted under its sessions. The lease (6 s) outlives a restart
 * (well under a second here): the sessions survive it, holders keep their locks, waiters keep waiting.
 */
describe('PostgreSQL restarted under its sessions', () => {
  const LEASE_MS = 6_000;
  let server: PgServer | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });
  const scope = useScope(() => postgresFixtureOf(server!.url, 'postgres (own server)', 'baton', LEASE_MS));
  const register = useRegister();

  for (const [how, signal] of [
    ['a fast shutdown (SIGINT)', 'SIGINT'],
    ['an immediate shutdown (SIGQUIT: crash recovery at the restart)', 'SIGQUIT'],
  ] as const) {
    it(`after ${how} the holder still holds, the waiter is granted only on its release, and no row is left`, async () => {
      const [holder, waiter] = [await scope.open(), await scope.open()];
      const [holderStates, waiterStates] = [statesOf(holder), statesOf(waiter)];
      const held = await new FairMutex(holder, 'restart').acquire();
      await writeWhileHeld(register().url, held);
      const waiting = track(new FairMutex(waiter, 'restart').acquire({ timeoutMs: LEASE_MS * 5 }));
      await eventually('waiter queued', async () => (await backendOf(waiter).list('restart')).length === 2, LEASE_MS);
      await server!.kill(signal);
      await server!.start();
      await eventually(
        'both sessions suspended, then connected again',
        () =>
          holderStates.includes('suspended') &&
          waiterStates.includes('suspended') &&
          holder.state === 'connected' &&
          waiter.state === 'connected',
        LEASE_MS,
      );
      expect([...holderStates, ...waiterStates]).not.toContain('lost');
      expect(held.signal.aborted).toBe(false);
      expect(await backendOf(holder).confirm(entryOf(held))).toBe(true);
      // The waiter listens again on the new connection: nothing granted it the lock meanwhile.
      expect(waiting.settled).toBe(false);
      await writeWhileHeld(register().url, held);
      const notified = postgresCounters.notifications;
      await held.release();
      const lock = await waiting.promise;
      // Woken by the notification on its new listening connection, not by the backstop's re-read.
      expect(postgresCounters.notifications).toBeGreaterThan(notified);
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
      await writeWhileHeld(register().url, lock);
      await expectLateWriteRefused(register().url, held);
      await lock.release();
      await Promise.all([holder.close(), waiter.close()]);
      expect(await rowsLeft(server!.url, 'baton', scope.namespace)).toBe(0);
    });
  }

  it('a session whose lease runs out while the server is down is lost, its holder told before the server could grant anyone', async () => {
    const SHORT_MS = 1_000;
    const short = await scope.open({ sessionTimeoutMs: SHORT_MS });
    const other = await scope.open();
    const held = await new FairMutex(short, 'outage').acquire();
    let toldAt = Number.NaN;
    held.signal.addEventListener('abort', () => (toldAt = performance.now()), { once: true });
    const downAt = performance.now();
    await server!.kill('SIGINT');
    try {
      await eventually('the holder told', () => held.signal.aborted, SHORT_MS * 2);
      expect(toldAt - downAt).toBeLessThan(SHORT_MS); // its last renewal was sent before the server went down
    } finally {
      await server!.start();
    }
    await eventually('the short session lost', () => short.state === 'lost', LEASE_MS);
    const lock = await new FairMutex(other, 'outage').acquire({ timeoutMs: LEASE_MS });
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
    await other.close();
    await short.close();
    expect(await rowsLeft(server!.url, 'baton', scope.namespace)).toBe(0);
  });
});

describe('PostgreSQL: statements held up or failing part-way, a terminated backend', () => {
  const schema = `f_${randomUUID().slice(0, 8)}`;
  const scope = useScope(() => postgresFixtureOf(postgresUrl(), 'postgres', schema));
  const register = useRegister();
  afterAll(async () => {
    await withPostgres(postgresUrl(), (client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  });

  it('an enqueue whose statement fails after its insert leaves no row, fails the acquire, and the session carries on', async () => {
    const session = await scope.open();
    // A trigger of the test's own fails the statement after the entry's row was inserted, for one queue.
    await withPostgres(postgresUrl(), async (client) => {
      await client.query(
        `CREATE FUNCTION ${schema}.fail_partway() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'failed part-way'; END $$`,
      );
      await client.query(
        `CREATE TRIGGER fail_partway AFTER INSERT ON ${schema}.entries FOR EACH ROW WHEN (NEW.queue = 'partway') EXECUTE FUNCTION ${schema}.fail_partway()`,
      );
    });
    try {
      const failed = await new FairMutex(session, 'partway').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(failed).toBeInstanceOf(BackendError);
      expect((failed?.cause as { code?: string } | undefined)?.code).toBe('P0001');
      expect(await rowsLeft(postgresUrl(), schema, scope.namespace)).toBe(0);
      expect(session.state).toBe('connected');
      const other = await new FairMutex(session, 'elsewhere').acquire();
      await other.release();
    } finally {
      await withPostgres(postgresUrl(), (client) => client.query(`DROP TRIGGER fail_partway ON ${schema}.entries`));
    }
    const lock = await new FairMutex(session, 'partway').acquire();
    await lock.release();
    expect(await rowsLeft(postgresUrl(), schema, scope.namespace)).toBe(0);
  });

  it('an expired lease is never renewed: the late heartbeat loses the session, and the next look at the queue removes its entries', async () => {
    const [late, other] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(late, 'late').acquire();
    const waiting = track(new FairMutex(other, 'late').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
    await eventually(
      'waiter queued',
      async () => (await backendOf(other).list('late')).length === 2,
      scope.fixture.lossDeadlineMs,
    );
    // The lease ran out by the server's clock (as if the client had been silent); its row is still there.
    await withPostgres(postgresUrl(), (client) =>
      client.query(
        `UPDATE ${schema}.sessions SET expires_at = clock_timestamp() - interval '1 millisecond' WHERE id = $1`,
        [late.id.replace(/^pg-/, '')],
      ),
    );
    await eventually(
      'the late session lost at its next heartbeat',
      () => late.state === 'lost',
      scope.fixture.lossDeadlineMs,
    );
    expect(held.signal.aborted).toBe(true);
    const lock = await waiting.promise;
    expect(await rowsLeft(postgresUrl(), schema, scope.namespace)).toBe(1); // the waiter's, now holder's
    await lock.release();
    await Promise.all([late.close(), other.close()]);
    expect(await rowsLeft(postgresUrl(), schema, scope.namespace)).toBe(0);
  });

  it('two enqueues into one queue, the first held up between its token and its commit: the second waits for it, never both granted', async () => {
    const [first, second] = [await scope.open(), await scope.open()];
    // Under READ COMMITTED the second enqueue could take a larger token, commit, and see itself alone
    // while the first, with the smaller token, is not yet committed: both would be granted. A trigger
    // of the test's own holds the first one up right after its insert, to open that window wide.
    await withPostgres(postgresUrl(), async (client) => {
      await client.query(
        `CREATE FUNCTION ${schema}.hold_up() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END $$`,
      );
      await client.query(
        `CREATE TRIGGER hold_up AFTER INSERT ON ${schema}.entries FOR EACH ROW WHEN (NEW.queue = 'race' AND NEW.session = ${first.id.replace(/^pg-/, '')}) EXECUTE FUNCTION ${schema}.hold_up()`,
      );
    });
    try {
      const firstAcquire = track(new FairMutex(first, 'race').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
      await eventually('the first enqueue held up after its insert', () =>
        withPostgres(
          postgresUrl(),
          async (client) =>
            (
              await client.query(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%.enqueue%'",
              )
            ).rows.length === 1,
        ),
      );
      const second_ = await new FairMutex(second, 'race').tryAcquire();
      const held = await firstAcquire.promise;
      expect(second_, 'granted while the first enqueue, ahead of it, was granted too').toBeNull();
      await held.release();
    } finally {
      await withPostgres(postgresUrl(), (client) => client.query(`DROP TRIGGER hold_up ON ${schema}.entries`));
    }
    await Promise.all([first.close(), second.close()]);
    expect(await rowsLeft(postgresUrl(), schema, scope.namespace)).toBe(0);
  });

  it('a waiter whose notification never comes is woken by the backstop within a quarter lease or so', async () => {
    const [holder, waiter] = [await scope.open(), await scope.open()];
    const leaseMs = scope.fixture.options.sessionTimeoutMs!;
    const held = await new FairMutex(holder, 'silent').acquire();
    const waiting = track(new FairMutex(waiter, 'silent').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
    await eventually('waiter watching', async () =>
      (await scope.fixture.watched(scope.namespace)).includes(entryOf(held).key),
    );
    // Deletes notify nobody while the trigger is off: the release's notification is lost.
    await withPostgres(postgresUrl(), (client) =>
      client.query(`ALTER TABLE ${schema}.entries DISABLE TRIGGER entry_gone`),
    );
    try {
      const notified = postgresCounters.notifications;
      const releasedAt = performance.now();
      await held.release();
      const lock = await waiting.promise;
      // The backstop looks every quarter lease; the look and the grant take a little more.
      expect(performance.now() - releasedAt).toBeLessThan(leaseMs / 2);
      expect(postgresCounters.notifications).toBe(notified);
      await lock.release();
    } finally {
      await withPostgres(postgresUrl(), (client) =>
        client.query(`ALTER TABLE ${schema}.entries ENABLE TRIGGER entry_gone`),
      );
    }
  });

  it("pg_terminate_backend of both of the sessions' connections: they reconnect, the holder holds, the waiter is woken on release", async () => {
    const [holder, waiter] = [await scope.open(), await scope.open()];
    const [holderStates, waiterStates] = [statesOf(holder), statesOf(waiter)];
    const held = await new FairMutex(holder, 'terminated').acquire();
    await writeWhileHeld(register().url, held);
    const waiting = track(new FairMutex(waiter, 'terminated').acquire({ timeoutMs: scope.fixture.lossDeadlineMs * 2 }));
    await eventually(
      'waiter queued',
      async () => (await backendOf(waiter).list('terminated')).length === 2,
      scope.fixture.lossDeadlineMs,
    );
    const pids = [
      ...Object.values(await postgresProbeOf(holder).view.backendPids()),
      ...Object.values(await postgresProbeOf(waiter).view.backendPids()),
    ];
    expect(pids.every((pid) => typeof pid === 'number')).toBe(true);
    await withPostgres(postgresUrl(), (client) =>
      client.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]),
    );
    await eventually(
      'both sessions suspended, then connected again',
      () =>
        holderStates.includes('suspended') &&
        waiterStates.includes('suspended') &&
        holder.state === 'connected' &&
        waiter.state === 'connected',
      scope.fixture.lossDeadlineMs,
    );
    expect(held.signal.aborted).toBe(false);
    expect(await backendOf(holder).confirm(entryOf(held))).toBe(true);
    const now = [
      ...Object.values(await postgresProbeOf(holder).view.backendPids()),
      ...Object.values(await postgresProbeOf(waiter).view.backendPids()),
    ];
    expect(now.filter((pid) => pids.includes(pid))).toEqual([]);
    expect(waiting.settled).toBe(false);
    const notified = postgresCounters.notifications;
    await held.release();
    const lock = await waiting.promise;
    expect(postgresCounters.notifications, 'woken by its notification, not the backstop').toBeGreaterThan(notified);
    await writeWhileHeld(register().url, lock);
    await lock.release();
    await Promise.all([holder.close(), waiter.close()]);
    expect(await rowsLeft(postgresUrl(), schema, scope.namespace)).toBe(0);
  });
});
