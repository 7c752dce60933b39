import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { InvalidArgumentError, LockLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { sessionRowOf } from '../../../src/backends/postgres/driver.js';
import { POSTGRES_SESSION_MS, postgresFixture, postgresUrl, withPostgres } from '../../harness/backends/postgres.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';

/** The PostgreSQL guarded transaction: the user's statements commit only while the lock is held. */
describe('guarded transaction on PostgreSQL', () => {
  const scope = useScope(postgresFixture);
  let client: pg.Client;
  let table = '';

  beforeEach(async () => {
    table = `ledger_${scope.namespace.replace(/-/g, '_')}`;
    client = new pg.Client({ connectionString: postgresUrl() });
    client.on('error', () => undefined);
    await client.connect();
    await client.query(`CREATE TABLE ${table} (k text PRIMARY KEY, v text NOT NULL)`);
  });
  afterEach(async () => {
    await client.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    await client.end().catch(() => undefined);
  });

  const rows = async (): Promise<string[]> =>
    (await client.query<{ k: string }>(`SELECT k FROM ${table} ORDER BY k`)).rows.map((row) => row.k);

  it("commits the user's statements while the lock is held, and returns what the work returns", async () => {
    const session = await scope.open();
    const lock = await new FairMutex(session, 'settle').acquire();
    const result = await lock.guarded.transaction(client, async (tx) => {
      await tx.query(`INSERT INTO ${table} (k, v) VALUES ($1, $2)`, ['2026-11', 'settled']);
      return 'done';
    });
    expect(result).toBe('done');
    expect(await rows()).toEqual(['2026-11']);
    await lock.release();
  });

  it('rolls back and rethrows when the work throws; the client is usable afterwards', async () => {
    const session = await scope.open();
    const lock = await new FairMutex(session, 'settle').acquire();
    const failure = new Error('business rule');
    await expect(
      lock.guarded.transaction(client, async (tx) => {
        await tx.query(`INSERT INTO ${table} (k, v) VALUES ('a', 'x')`);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await rows()).toEqual([]);
    await lock.release();
  });

  it('refuses at the start when the entry is already gone (LockLostError, nothing written)', async () => {
    const session = await scope.open();
    const lock = await new FairMutex(session, 'settle').acquire();
    await scope.fixture.removeEntry(entryOf(lock).key);
    // Past the handle's own check, to the server: the first statement finds no entry row.
    const backend = backendOf(session);
    await expect(
      backend.guardedTransaction!(
        entryOf(lock),
        client,
        async (tx) => tx.query(`INSERT INTO ${table} (k, v) VALUES ('late', 'x')`),
        { limitMs: undefined, signal: new AbortController().signal },
        'lock "settle"',
      ),
    ).rejects.toBeInstanceOf(LockLostError);
    expect(await rows()).toEqual([]);
    await lock.release();
  });

  it('keeps the next holder waiting while the transaction is open past the lease; the late commit fails and rolls back', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'settle').acquire();
    let grantedAt = 0;
    const waiting = new FairMutex(b, 'settle').acquire().then((lock) => {
      grantedAt = performance.now();
      return lock;
    });
    await eventually('b queued', async () => (await backendOf(b).list('settle')).length === 2);
    let endedAt = 0;
    const outcome = held.guarded
      .transaction(
        client,
        async (tx) => {
          await tx.query(`INSERT INTO ${table} (k, v) VALUES ('2026-11', 'by the old holder')`);
          // The holder's lease runs out on the server while its transaction is open (a pause).
          await withPostgres(postgresUrl(), (admin) =>
            admin.query('UPDATE baton.sessions SET expires_at = clock_timestamp() WHERE id = $1', [sessionRowOf(a.id)]),
          );
          // Long enough for the waiter's backstop to find the lease gone and list (and sweep) again.
          await new Promise((resolve) => setTimeout(resolve, POSTGRES_SESSION_MS * 1.5));
          expect(grantedAt).toBe(0);
          // Server-side bounds above the pause (by default they are the session timeout, which would end it).
        },
        { timeoutMs: POSTGRES_SESSION_MS * 10 },
      )
      .finally(() => (endedAt = performance.now()));
    await expect(outcome).rejects.toBeInstanceOf(LockLostError);
    expect(await rows()).toEqual([]);
    const next = await waiting;
    expect(grantedAt).toBeGreaterThanOrEqual(endedAt);
    // The next holder's own transaction commits.
    await next.guarded.transaction(client, async (tx) => {
      await tx.query(`INSERT INTO ${table} (k, v) VALUES ('2026-11', 'by the next holder')`);
    });
    expect(await rows()).toEqual(['2026-11']);
    await next.release();
  });

  it('refuses a guarded put once the lease ran out by the server clock, while the rows are still there', async () => {
    const session = await scope.open();
    const held = await new FairMutex(session, 'lease').acquire();
    await held.guarded.put('v', 'before');
    await withPostgres(postgresUrl(), (admin) =>
      admin.query('UPDATE baton.sessions SET expires_at = clock_timestamp() WHERE id = $1', [sessionRowOf(session.id)]),
    );
    const backend = backendOf(session);
    expect(await backend.guardedWrite(entryOf(held), { type: 'put', name: 'v', value: 'after' })).toBe(false);
    expect(await backend.guardedWrite(entryOf(held), { type: 'delete', name: 'v' })).toBe(false);
    expect(await backend.guardedRead('lease', 'v')).toBe('before');
    const other = await scope.open();
    const next = await new FairMutex(other, 'lease').acquire({ timeoutMs: POSTGRES_SESSION_MS * 5 });
    await next.guarded.delete('v');
    await Promise.all([next.release(), held.release()]);
  });

  it('refuses a pool (each statement could run on another connection) and anything without query()', async () => {
    const session = await scope.open();
    const lock = await new FairMutex(session, 'settle').acquire();
    const pool = new pg.Pool({ connectionString: postgresUrl(), max: 1 });
    try {
      await expect(lock.guarded.transaction(pool, async () => undefined)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(lock.guarded.transaction({} as pg.Client, async () => undefined)).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
    } finally {
      await pool.end();
    }
    await lock.release();
  });
});
