import { randomUUID } from 'node:crypto';

import { connect, postgresCounters } from 'baton-locks/testing';
import { afterAll, describe, expect, it } from 'vitest';

import type { Entry, Session } from '../../../recipes/contract.js';
import { moversAhead } from '../../../recipes/decide.js';
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

/** Rows a reader's wake (or enqueue) reads: its own, a first window of 17 ahead, then all `ahead` if the 16 did not decide. */
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

describe('PostgreSQL: an enqueue at the tail reads only what the first decision needs (issue 37, enqueue_ahead)', () => {
  const schema = ownSchema('e');
  const scope = useScope(() => postgresFixtureOf(postgresUrl(), 'postgres', schema));

  it('answers as the whole listing cut at the new entry would: window, more, position, movers far ahead', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const [mine, theirs] = [backendOf(a), backendOf(b)];
    const made: [typeof mine, Entry][] = [];
    const add = async (backend: typeof mine, kind: string, at?: Entry): Promise<Entry> => {
      const { entry } = await backend.enqueue('window', kind, at);
      made.push([backend, entry]);
      return entry;
    };
    // A write and a semaphore entry far ahead of the window, reads and mutexes nearer, an entry placed
    // at the write's place (a downgrade's read) last: each sort where the listing puts them.
    const write = await add(theirs, 'write');
    for (let i = 0; i < 20; i += 1) await add(theirs, 'read');
    await add(theirs, 'read', write);
    const steps: [string, number][] = [
      ['read', 16],
      ['mutex', 1],
      ['semaphore_2_3', 1],
      ['read', 16],
    ];
    for (const [kind, page] of steps) {
      const placed = await mine.enqueueAhead!('window', kind, { page, count: true });
      made.push([mine, placed.entry]);
      const whole = await mine.list('window');
      expect(whole[whole.length - 1]?.key, 'the new entry is at the tail').toBe(placed.entry.key);
      const cut = aheadIn(whole, placed.entry, page);
      expect({
        ahead: placed.ahead.map((e) => e.key),
        more: placed.more,
        position: placed.position,
        movers: [...placed.movers].sort(),
      }).toEqual({
        ahead: cut.entries.map((e) => e.key),
        more: cut.more,
        position: whole.length - 1,
        movers: moversAhead(whole, placed.entry).sort(),
      });
      expect(placed.entry).toEqual(whole[whole.length - 1]);
    }
    // The last steps saw both movers, 21 and more entries away.
    for (const [backend, entry] of made) await backend.withdraw(entry);
    const alone = await mine.enqueueAhead!('window', 'mutex', { page: 1, count: true });
    expect(alone).toMatchObject({ ahead: [], more: false, position: 0, movers: [] });
    // Uncounted (no trace asks for it): the same answer without the position.
    const behind = await mine.enqueueAhead!('window', 'write', { page: 1, count: false });
    expect(behind.position).toBeUndefined();
    expect(behind).toMatchObject({ ahead: [alone.entry], more: false, movers: [] });
    await mine.withdraw(behind.entry);
    await mine.withdraw(alone.entry);
  });

  it('plans cached while the queue was short stay index probes at 2,000 entries (enqueue_ahead, list_before)', async () => {
    const own = ownSchema('c');
    await withPostgres(postgresUrl(), async (client) => {
      await client.query(`BEGIN; ${schemaSql(own)} COMMIT;`);
      const session = String((await client.query(`SELECT ${own}.open_session(600000, 'plans') AS id`)).rows[0].id);
      const enqueue = (n: number): Promise<unknown> =>
        client.query(`SELECT * FROM ${own}.enqueue_ahead($1, $2, 'ns', 'q', 'mutex', '', 1, false)`, [
          session,
          `s${session}.${n}`,
        ]);
      // The function's plans are made at its first calls, with the table empty, and kept.
      for (let n = 1; n <= 2_000; n += 1) await enqueue(n);
      const steps: string[] = [];
      client.on('notice', (notice) => steps.push(notice.message ?? ''));
      await client.query(`LOAD 'auto_explain'`);
      await client.query(
        'SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_nested_statements = on; SET client_min_messages = log',
      );
      await enqueue(2_001);
      const last = (await client.query(`SELECT token FROM ${own}.entries WHERE key = $1`, [`s${session}.2001`])).rows[0]
        .token;
      await client.query(`SELECT * FROM ${own}.list_before('ns', 'q', $1, $2, $2, 1)`, [`s${session}.2001`, last]);
      await client.query('RESET client_min_messages');
      const read = (step: string): number =>
        Math.max(
          0,
          ...[...step.matchAll(/actual time=\S+ rows=(\d+)|Rows Removed by Filter: (\d+)/g)].map((m) =>
            Number(m[1] ?? m[2]),
          ),
        );
      expect(steps.length, 'auto_explain told every step').toBeGreaterThan(10);
      // Each step reads its row, the window of two, or (the outer calls) the answer's three rows.
      expect(steps.filter((step) => read(step) > 3)).toEqual([]);
    });
  });

  it('64 mutex waiters queue reading their own row and at most two ahead each; 32 readers behind a writer a window of 17', async () => {
    const holderSession = await scope.open();
    const sessions = [await scope.open(), await scope.open()];
    const holder = await new FairMutex(holderSession, 'tail').acquire();
    let rowsBefore = postgresCounters.queueRowsRead;
    const waits = await queueUp(schema, scope, sessions, 64, 'tail', 1, (s) => new FairMutex(s, 'tail').acquire());
    // Whole listings would read 2 + 3 + ... + 65 = 2,144 rows.
    expect(postgresCounters.queueRowsRead - rowsBefore).toBeLessThanOrEqual(64 * 3);
    const writer = await new ReadWriteLock(holderSession, 'shared').writeLock.acquire();
    rowsBefore = postgresCounters.queueRowsRead;
    const reads = await queueUp(schema, scope, sessions, 32, 'shared', 1, (s) =>
      new ReadWriteLock(s, 'shared').readLock.acquire(),
    );
    // A reader with more than 16 reads ahead finds no writer in its window and reads all that is ahead.
    let bound = 0;
    for (let ahead = 1; ahead <= 32; ahead += 1) bound += readerWakeRows(ahead);
    expect(postgresCounters.queueRowsRead - rowsBefore).toBeLessThanOrEqual(bound);
    await holder.release();
    for (const wait of waits) await (await wait).release();
    await writer.release();
    for (const read of reads) await (await read).release();
  });
});

describe('PostgreSQL: a schema made before list_before and enqueue_ahead (rolling deploys)', () => {
  const schema = ownSchema('o');
  const scope = useScope(() => postgresFixtureOf(postgresUrl(), 'postgres', schema));
  /** Which of the objects added since the schema's first release are in `where`. */
  const addedIn = (where: string): Promise<string[]> =>
    withPostgres(postgresUrl(), async (client) =>
      (
        await client.query<{ name: string }>(
          `SELECT p.proname::text AS name FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = $1 AND p.proname IN ('list_before', 'put_entry', 'enqueue_ahead')
           UNION ALL SELECT c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relname IN ('entries_writes', 'entries_semaphores') ORDER BY 1`,
          [where],
        )
      ).rows.map((row) => row.name),
    );
  const ALL = ['enqueue_ahead', 'entries_semaphores', 'entries_writes', 'list_before', 'put_entry'];
  /** As older code made it: the same version, without the short read and the bounded enqueue. */
  const withoutAdditions = (where: string): string =>
    `DROP FUNCTION ${where}.list_before; DROP FUNCTION ${where}.enqueue_ahead; DROP INDEX ${where}.entries_writes; DROP INDEX ${where}.entries_semaphores;`;

  it('lists whole queues with createSchema: false, and gets the functions back with createSchema: true', async () => {
    await withPostgres(postgresUrl(), (client) =>
      client.query(`BEGIN; ${schemaSql(schema)} ${withoutAdditions(schema)} COMMIT;`),
    );
    expect(await addedIn(schema)).toEqual(['put_entry']);
    const old = [await scope.open({ createSchema: false }), await scope.open({ createSchema: false })];
    const fallback = await drainMutex(schema, scope, await scope.open({ createSchema: false }), old, 16, 'old');
    expect(await addedIn(schema), 'createSchema: false adds nothing').toEqual(['put_entry']);
    // Correct, not flat: every wake lists the queue still there (16 + 15 + ... + 1 rows).
    expect(fallback.rows).toBeGreaterThanOrEqual(136);

    const added = await scope.open(); // createSchema defaults to true
    expect(await addedIn(schema)).toEqual(ALL);
    const sessions = [await scope.open({ createSchema: false }), await scope.open({ createSchema: false })];
    const short = await drainMutex(schema, scope, added, sessions, 16, 'new');
    expect(short.rows).toBeLessThanOrEqual(2 * 16);
    // The sessions opened before it still work beside the new ones (on the whole listing).
    const again = await drainMutex(schema, scope, old[0]!, [old[1]!, sessions[0]!], 4, 'mixed');
    expect(again.rows).toBeGreaterThan(0);
  });

  it('adds put_entry too where it is missing, before any enqueue needs it, and the enqueues read a window', async () => {
    const older = ownSchema('p');
    await withPostgres(postgresUrl(), (client) =>
      client.query(`BEGIN; ${schemaSql(older)} ${withoutAdditions(older)} DROP FUNCTION ${older}.put_entry; COMMIT;`),
    );
    expect(await addedIn(older)).toEqual([]);
    const fixture = postgresFixtureOf(postgresUrl(), 'postgres', older);
    const sessions: Session[] = [];
    try {
      // Three processes connecting at once: one adds each object, the others find it there or lose the race.
      const opened = await Promise.allSettled(
        [0, 1, 2].map(() => connect(fixture.url(scope.namespace), fixture.options)),
      );
      for (const result of opened) if (result.status === 'fulfilled') sessions.push(result.value);
      expect(opened.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
      expect(await addedIn(older)).toEqual(ALL);
      const holder = await new FairMutex(sessions[0]!, 'put').acquire();
      const before = postgresCounters.queueRowsRead;
      const waits = await queueUp(older, scope, sessions.slice(1), 16, 'put', 1, (s) =>
        new FairMutex(s, 'put').acquire(),
      );
      // Whole listings would read 2 + 3 + ... + 17 = 152 rows.
      expect(postgresCounters.queueRowsRead - before).toBeLessThanOrEqual(16 * 3);
      await holder.release();
      for (const wait of waits) await (await wait).release();
    } finally {
      await Promise.allSettled(sessions.map((session) => session.close()));
    }
  });

  it('connects without the function when its role may not create functions in the schema (createSchema left at true)', async () => {
    // A DBA made the schema (as older baton did) and granted the application role what it needs, no CREATE.
    const role = `baton_nocreate_${schema}`;
    const owned = ownSchema('n');
    await withPostgres(postgresUrl(), (client) =>
      client.query(
        `BEGIN; ${schemaSql(owned)} ${withoutAdditions(owned)} CREATE ROLE ${role} LOGIN;` +
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
      expect(await addedIn(owned), 'nothing it could not add').toEqual(['put_entry']);
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
