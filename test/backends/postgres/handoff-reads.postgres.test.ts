import { randomUUID } from 'node:crypto';

import { connect, postgresCounters } from 'baton-locks/testing';
import { afterAll, describe, expect, it } from 'vitest';

import type { Entry, Session } from '../../../recipes/contract.js';
import type { LockHandle } from '../../../recipes/handle.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import { aheadIn } from '../../../src/backends/postgres/list-before.js';
import { schemaSql } from '../../../src/backends/postgres/schema.js';
import { postgresFixtureOf, postgresUrl, withPostgres } from '../../harness/backends/postgres.js';
import { type Scope, useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { queueInOrder } from '../../harness/queue-in-order.js';
import { eventually, track } from '../../harness/wait.js';

/** Rows a reader's wake reads: its own, a first window of 17 ahead, then all `ahead` if the 16 did not decide. */
function readerWakeRows(ahead: number): number {
  return 1 + Math.min(ahead, 17) + (ahead > 16 ? ahead + 1 : 0);
}

/** The number of `queue`'s entries in the scope's namespace, read on the server. */
function entriesIn(schema: string, scope: Scope, queue: string): Promise<number> {
  return withPostgres(
    postgresUrl(),
    async (client) =>
      (
        await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${schema}.entries WHERE namespace = $1 AND queue = $2`,
          [scope.namespace, queue],
        )
      ).rows[0]!.n,
  );
}

function queueUp(
  schema: string,
  scope: Scope,
  sessions: readonly Session[],
  count: number,
  name: string,
  already: number,
  acquire: (session: Session) => Promise<LockHandle>,
): Promise<Promise<LockHandle>[]> {
  return queueInOrder(sessions, count, already, () => entriesIn(schema, scope, name), acquire);
}

/** A mutex held in `holderSession` and `count` waiters behind it; drained one by one; what it cost. */
async function drainMutex(
  schema: string,
  scope: Scope,
  holderSession: Session,
  sessions: readonly Session[],
  count: number,
  name: string,
): Promise<{ rows: number; statements: number }> {
  const holder = await new FairMutex(holderSession, name).acquire();
  const waits = await queueUp(schema, scope, sessions, count, name, 1, (s) => new FairMutex(s, name).acquire());
  const rowsBefore = postgresCounters.queueRowsRead;
  const statementsBefore = postgresCounters.statements;
  await holder.release();
  for (const wait of waits) await (await wait).release();
  return {
    rows: postgresCounters.queueRowsRead - rowsBefore,
    statements: postgresCounters.statements - statementsBefore,
  };
}

const dropped: string[] = [];
afterAll(async () => {
  await withPostgres(postgresUrl(), async (client) => {
    for (const schema of dropped) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  });
});

/** A schema of this file's own: no other file's new session sweeps the expired sessions planted here. */
function ownSchema(prefix: string): string {
  const schema = `${prefix}_${randomUUID().slice(0, 8)}`;
  dropped.push(schema);
  return schema;
}

describe('PostgreSQL: a handoff reads only what the waiter decision needs (issue 37, list_before)', () => {
  const schema = ownSchema('h');
  const scope = useScope(() => postgresFixtureOf(postgresUrl(), 'postgres', schema));

  it('answers as the whole listing cut at self would: nearest first, at most limit, more, placed entries at their place, self gone', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const [mine, theirs] = [backendOf(a), backendOf(b)];
    const made: Entry[] = [];
    for (const [backend, kind] of [
      [mine, 'write'],
      [theirs, 'read'],
      [mine, 'read'],
      [theirs, 'mutex'],
      [mine, 'write'],
    ] as const)
      made.push((await backend.enqueue('shape', kind)).entry);
    // Placed at the second entry's place after every other was made (a downgrade's read does this).
    made.push((await theirs.enqueue('shape', 'read', made[1])).entry);
    const whole = await mine.list('shape');
    expect(whole.map((e) => e.key)).toEqual([0, 1, 5, 2, 3, 4].map((i) => made[i]!.key));
    for (const self of made) {
      for (const limit of [1, 2, 16, undefined]) {
        const short = await mine.listBefore!('shape', self, limit);
        const cut = aheadIn(whole, self, limit);
        expect({ ...short, entries: short.entries.map((e) => e.key) }, `${self.key} limit ${limit}`).toEqual({
          ...cut,
          entries: cut.entries.map((e) => e.key),
        });
      }
    }
    await theirs.withdraw(made[3]!);
    expect(await mine.listBefore!('shape', made[3]!, 1)).toMatchObject({ present: false });
    for (const [i, entry] of made.entries()) if (i !== 3) await (i % 2 === 0 ? mine : theirs).withdraw(entry);
  });

  it('a mutex handoff behind 64 waiters reads O(1) rows and sends two statements (release, one short read)', async () => {
    const holderSession = await scope.open();
    const sessions = [await scope.open(), await scope.open()];
    const { rows, statements } = await drainMutex(schema, scope, holderSession, sessions, 64, 'deep');
    // A woken waiter reads its own row and at most the two nearest ahead; a whole listing at each wake
    // would read the 64, 63, ... entries still queued (2,080 rows in all).
    expect(rows).toBeLessThanOrEqual(2 * 64);
    // One delete and one read per handoff, beside the backstop's rare look.
    expect(statements).toBeLessThanOrEqual(2 * 65 + 12);
  });

  it('128 readers woken behind a writer read back to the head, never the 32 writers queued behind them', async () => {
    const writerSession = await scope.open();
    const sessions = [await scope.open(), await scope.open()];
    const writer = await new ReadWriteLock(writerSession, 'readers').writeLock.acquire();
    const reads = await queueUp(schema, scope, sessions, 128, 'readers', 1, (s) =>
      new ReadWriteLock(s, 'readers').readLock.acquire(),
    );
    const writes = await queueUp(schema, scope, sessions, 32, 'readers', 129, (s) =>
      new ReadWriteLock(s, 'readers').writeLock.acquire(),
    );
    const rowsBefore = postgresCounters.queueRowsRead;
    await writer.release();
    const held = await Promise.all(reads);
    const rows = postgresCounters.queueRowsRead - rowsBefore;
    let bound = 0;
    for (let ahead = 0; ahead < 128; ahead += 1) bound += readerWakeRows(ahead);
    // 10,254 rows; with whole listings (the function dropped) this read 38,240: 160 rows at every look.
    expect(rows).toBeLessThanOrEqual(bound);
    const tracked = writes.map((write) => track(write));
    for (const read of held) await read.release();
    for (const write of tracked) await (await write.promise).release();
  });

  it("an expired session's entry ahead is swept by the short read and the waiter granted; expired entries behind are left", async () => {
    const row = (sql: string, values: unknown[]): Promise<Record<string, unknown>[]> =>
      withPostgres(postgresUrl(), async (client) => (await client.query(sql, values)).rows);
    // Sessions of a client that stopped without a word (nobody deletes their rows but a sweep).
    const plant = async (queue: string): Promise<string> => {
      const id = String((await row(`SELECT ${schema}.open_session(60000, 'gone') AS id`, []))[0]!['id']);
      await row(`SELECT * FROM ${schema}.enqueue($1, $2, $3, $4, 'mutex', NULL, '')`, [
        id,
        `s${id}.1`,
        scope.namespace,
        queue,
      ]);
      return id;
    };
    const waiterSession = await scope.open();
    const ahead = await plant('swept');
    const waiting = track(new FairMutex(waiterSession, 'swept').acquire({ timeoutMs: 20_000 }));
    await eventually('the waiter queued', async () => (await entriesIn(schema, scope, 'swept')) === 2);
    const behind = [await plant('swept'), await plant('swept'), await plant('swept')];
    const statementsBefore = postgresCounters.statements;
    await row(
      `UPDATE ${schema}.sessions SET expires_at = clock_timestamp() - interval '1 millisecond' WHERE id = ANY($1::bigint[])`,
      [[ahead, ...behind]],
    );
    // No delete notifies the waiter: its backstop finds the lease gone, and its short read sweeps it.
    const lock = await waiting.promise;
    const left = await row(
      `SELECT o.id::text AS id FROM ${schema}.sessions o WHERE o.id = ANY($1::bigint[]) ORDER BY o.id`,
      [[ahead, ...behind]],
    );
    expect(left.map((r) => r['id'])).toEqual(behind);
    // Short reads, not listings: at most a few statements beside the backstop's looks.
    expect(postgresCounters.statements - statementsBefore).toBeLessThanOrEqual(12);
    await row(`DELETE FROM ${schema}.sessions WHERE id = ANY($1::bigint[])`, [behind]);
    await lock.release();
  });
});

describe('PostgreSQL: a schema made before list_before (rolling deploys)', () => {
  const schema = ownSchema('o');
  const scope = useScope(() => postgresFixtureOf(postgresUrl(), 'postgres', schema));
  const hasListBefore = (): Promise<boolean> => hasFunction(schema);
  const hasFunction = (where: string): Promise<boolean> =>
    withPostgres(
      postgresUrl(),
      async (client) =>
        (
          await client.query(
            'SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = $2',
            [where, 'list_before'],
          )
        ).rows.length > 0,
    );

  it('lists whole queues with createSchema: false, and gets the function back with createSchema: true', async () => {
    // As older code made it: the same version, without the function.
    await withPostgres(postgresUrl(), (client) =>
      client.query(`BEGIN; ${schemaSql(schema)} DROP FUNCTION ${schema}.list_before; COMMIT;`),
    );
    expect(await hasListBefore()).toBe(false);
    const old = [await scope.open({ createSchema: false }), await scope.open({ createSchema: false })];
    const fallback = await drainMutex(schema, scope, await scope.open({ createSchema: false }), old, 16, 'old');
    expect(await hasListBefore(), 'createSchema: false adds nothing').toBe(false);
    // Correct, not flat: every wake lists the queue still there (16 + 15 + ... + 1 rows).
    expect(fallback.rows).toBeGreaterThanOrEqual(136);

    const added = await scope.open(); // createSchema defaults to true
    expect(await hasListBefore()).toBe(true);
    const sessions = [await scope.open({ createSchema: false }), await scope.open({ createSchema: false })];
    const short = await drainMutex(schema, scope, added, sessions, 16, 'new');
    expect(short.rows).toBeLessThanOrEqual(2 * 16);
    // The sessions opened before it still work beside the new ones (on the whole listing).
    const again = await drainMutex(schema, scope, old[0]!, [old[1]!, sessions[0]!], 4, 'mixed');
    expect(again.rows).toBeGreaterThan(0);
  });

  it('connects without the function when its role may not create functions in the schema (createSchema left at true)', async () => {
    // A DBA made the schema (as older baton did) and granted the application role what it needs, no CREATE.
    const role = `baton_nocreate_${schema}`;
    const owned = ownSchema('n');
    await withPostgres(postgresUrl(), (client) =>
      client.query(
        `BEGIN; ${schemaSql(owned)} DROP FUNCTION ${owned}.list_before; CREATE ROLE ${role} LOGIN;` +
          ` GRANT USAGE ON SCHEMA ${owned} TO ${role};` +
          ` GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${owned} TO ${role};` +
          ` GRANT USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA ${owned} TO ${role}; COMMIT;`,
      ),
    );
    const url = new URL(postgresUrl());
    url.username = role;
    url.password = '';
    const fixture = postgresFixtureOf(url.toString(), 'postgres', owned);
    const sessions: Session[] = [];
    try {
      for (let i = 0; i < 3; i += 1) sessions.push(await connect(fixture.url(scope.namespace), fixture.options));
      expect(await hasFunction(owned)).toBe(false);
      const drained = await drainMutex(owned, scope, sessions[0]!, sessions.slice(1), 4, 'granted');
      expect(drained.rows).toBeGreaterThanOrEqual(4 + 3 + 2 + 1); // whole listings
    } finally {
      await Promise.allSettled(sessions.map((session) => session.close()));
      await withPostgres(postgresUrl(), async (client) => {
        await client.query(`DROP SCHEMA ${owned} CASCADE`);
        await client.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
      });
    }
  });
});
