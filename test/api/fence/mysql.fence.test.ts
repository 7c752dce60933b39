import { randomUUID } from 'node:crypto';

import { MYSQL_STALE_TOKEN_SQLSTATE, MysqlFence, StaleTokenError } from 'baton-locks/fence';
import mysql2 from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { mysqlFixture, mysqlUrl } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';
import { shuffled, uniqueTokens } from './tokens.js';

/** Marks and the business tables live in the user's database: here a database of this file's own. */
const database = `fence_${randomUUID().slice(0, 8)}`;
const fence = new MysqlFence({ database });
let admin: mysql2.Connection;

function connectionOptions(): mysql2.ConnectionOptions {
  return { uri: mysqlUrl(), supportBigNumbers: true, bigNumberStrings: true };
}

function open(): Promise<mysql2.Connection> {
  return mysql2.createConnection(connectionOptions());
}

async function rows<T>(connection: mysql2.Connection, sql: string, values: unknown[] = []): Promise<T[]> {
  return (await connection.query(sql, values))[0] as T[];
}

beforeAll(async () => {
  admin = await open();
  await admin.query(`CREATE DATABASE \`${database}\``);
  await fence.createSchema(admin);
  await fence.createSchema(admin); // idempotent: applied twice
  await admin.query(
    `CREATE TABLE \`${database}\`.ledger (period VARCHAR(64) PRIMARY KEY, settled_by VARCHAR(64) NOT NULL) ENGINE=InnoDB`,
  );
  await admin.query(
    `CREATE TABLE \`${database}\`.writes (seq BIGINT AUTO_INCREMENT PRIMARY KEY, resource VARCHAR(128), token BIGINT) ENGINE=InnoDB`,
  );
});

afterAll(async () => {
  await admin.query(`DROP DATABASE \`${database}\``);
  await admin.end();
});

async function markOf(resource: string): Promise<bigint | undefined> {
  const found = await rows<{ mark: string }>(
    admin,
    `SELECT CAST(mark AS CHAR) AS mark FROM \`${database}\`.baton_fence_marks WHERE resource = ?`,
    [Buffer.from(resource, 'utf8')],
  );
  return found[0] === undefined ? undefined : BigInt(found[0].mark);
}

/** The settlement write of the example: one row per period, fenced by the settlement lock's token. */
function settle(connection: mysql2.Connection, period: string, node: string, token: bigint): Promise<void> {
  return fence.transaction(connection, `ledger/${period}`, token, async (c) => {
    await c.query(
      `INSERT INTO \`${database}\`.ledger VALUES (?, ?) ON DUPLICATE KEY UPDATE settled_by = VALUES(settled_by)`,
      [period, node],
    );
  });
}

describe('the MySQL fence', () => {
  const scope = useScope(mysqlFixture);

  it("refuses the late write of a holder whose session expired, after the next holder wrote; the holder's row is rolled back", async () => {
    const period = randomUUID().slice(0, 8);
    const [expiring, other] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(expiring, 'settlement').acquire();
    const next = new FairMutex(other, 'settlement').acquire({ timeoutMs: 20_000 });
    await eventually('the waiter queued', async () => (await backendOf(other).list('settlement')).length === 2);
    await scope.fixture.expire(expiring); // the holder is paused past its lease: its session is gone
    const successor = await next;
    const connection = await open();
    try {
      await settle(connection, period, 'node-b', successor.fencingToken);
      const late = await settle(connection, period, 'node-a', held.fencingToken).catch((error: unknown) => error);
      expect(late).toBeInstanceOf(StaleTokenError);
      expect(late).toMatchObject({
        code: 'STALE_TOKEN',
        resource: `ledger/${period}`,
        token: held.fencingToken,
        mark: successor.fencingToken,
      });
      expect((late as StaleTokenError).cause).toMatchObject({ sqlState: MYSQL_STALE_TOKEN_SQLSTATE });
      const settled = await rows(connection, `SELECT settled_by FROM \`${database}\`.ledger WHERE period = ?`, [
        period,
      ]);
      expect(settled).toEqual([{ settled_by: 'node-b' }]);
      expect(await markOf(`ledger/${period}`)).toBe(successor.fencingToken);
      await settle(connection, period, 'node-b', successor.fencingToken); // the same holder writes again: passes
    } finally {
      await connection.end();
      await successor.release();
    }
  });

  it('raises SQLSTATE BF001 below the mark and rolls the whole transaction back, passes an equal token, and leaves no mark when the body fails', async () => {
    const resource = `r/${randomUUID()}`;
    const key = Buffer.from(resource, 'utf8');
    const advance = `CALL \`${database}\`.baton_fence_advance(?, ?, NULL)`;
    await admin.query('START TRANSACTION');
    await admin.query(advance, [key, '10']);
    await admin.query(advance, [key, '10']);
    await admin.query(`INSERT INTO \`${database}\`.writes (resource, token) VALUES (?, 9)`, [resource]);
    const raised = await admin.query(advance, [key, '9']).catch((error: unknown) => error);
    expect(raised).toMatchObject({
      sqlState: 'BF001',
      sqlMessage: 'baton fence: stale fencing token 9, the mark is 10',
    });
    await admin.query('COMMIT'); // nothing left to commit: the procedure rolled back before it raised
    expect(await markOf(resource), 'the rolled-back transaction moved no mark').toBeUndefined();
    expect(await rows(admin, `SELECT seq FROM \`${database}\`.writes WHERE resource = ?`, [resource])).toEqual([]);
    // A business write that fails after the fence passed takes the mark's move with it.
    const failed = await fence
      .transaction(admin, resource, 20n, () => Promise.reject(new Error('the write failed')))
      .catch((error: unknown) => error);
    expect(failed).toMatchObject({ message: 'the write failed' });
    expect(await markOf(resource)).toBeUndefined();
    await fence.transaction(admin, resource, 5n, async () => undefined);
    expect(await markOf(resource)).toBe(5n);
  });

  it('reads the latest committed mark under REPEATABLE READ: a snapshot taken before a newer write commits does not let an older token through', async () => {
    const resource = `snapshot/${randomUUID()}`;
    const [older, newer] = [await open(), await open()];
    try {
      await older.query('SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ');
      await older.query('START TRANSACTION WITH CONSISTENT SNAPSHOT'); // its snapshot has no mark yet
      await fence.transaction(newer, resource, 20n, async () => undefined);
      const late = await fence.advance(older, resource, 10n).catch((error: unknown) => error);
      expect(late).toBeInstanceOf(StaleTokenError);
      expect(late).toMatchObject({ resource, token: 10n, mark: 20n });
    } finally {
      await Promise.all([older.end(), newer.end()]);
    }
    expect(await markOf(resource)).toBe(20n);
  });

  it('never moves a mark backwards under 60 concurrent writers with tokens in random order; every accepted write was at or above the mark', async () => {
    const resource = `concurrent/${randomUUID()}`;
    const pool = mysql2.createPool({ ...connectionOptions(), connectionLimit: 8 });
    const tokens = shuffled(uniqueTokens(60));
    try {
      const outcomes = await Promise.all(
        tokens.map((token) =>
          fence
            .poolTransaction(pool, resource, token, async (connection) => {
              await connection.query(`INSERT INTO \`${database}\`.writes (resource, token) VALUES (?, ?)`, [
                resource,
                token.toString(),
              ]);
            })
            .then(
              () => 'accepted' as const,
              (error: unknown) => {
                expect(error).toBeInstanceOf(StaleTokenError);
                expect((error as StaleTokenError).mark > token).toBe(true);
                return 'refused' as const;
              },
            ),
        ),
      );
      const written = await rows<{ token: string }>(
        admin,
        `SELECT CAST(token AS CHAR) AS token FROM \`${database}\`.writes WHERE resource = ? ORDER BY seq`,
        [resource],
      );
      const accepted = written.map((row) => BigInt(row.token));
      expect(accepted.length).toBe(outcomes.filter((outcome) => outcome === 'accepted').length);
      for (let i = 1; i < accepted.length; i += 1) expect(accepted[i]! > accepted[i - 1]!).toBe(true);
      const highest = tokens.reduce((a, b) => (a > b ? a : b));
      expect(await markOf(resource)).toBe(highest);
      expect(accepted.at(-1)).toBe(highest);
    } finally {
      await pool.end();
    }
  });

  it('sends START TRANSACTION and the fence in one round trip: a fenced transaction of one statement is three queries, as a plain one; a refused one is one', async () => {
    const resource = `trips/${randomUUID()}`;
    const sent: string[] = [];
    const counting = {
      query: (sql: string, values?: unknown[]) => (sent.push(sql), admin.query(sql, values)),
    };
    await fence.transaction(counting, resource, 7n, (c) => c.query('SELECT 1'), { lockTimeoutMs: 5_000 });
    expect(sent).toEqual([expect.stringMatching(/^CALL `fence_\w+`\.baton_fence_begin\(/), 'SELECT 1', 'COMMIT']);
    expect(await markOf(resource)).toBe(7n);
    sent.length = 0; // a refused write is the CALL alone: the procedure rolled back, the body never ran
    await expect(fence.transaction(counting, resource, 6n, (c) => c.query('SELECT 1'))).rejects.toThrow(
      StaleTokenError,
    );
    expect(sent).toEqual([expect.stringMatching(/baton_fence_begin/)]);
  });

  it('waits for an older open transaction on the same mark at most lockTimeoutMs, then leaves nothing and gives the session its own lock wait back', async () => {
    const resource = `wait/${randomUUID()}`;
    const [holder, waiter] = [await open(), await open()];
    try {
      await holder.query(`CALL \`${database}\`.baton_fence_begin(?, 5, NULL)`, [Buffer.from(resource, 'utf8')]);
      const timedOut = await fence
        .transaction(waiter, resource, 6n, (c) => c.query('SELECT 1'), { lockTimeoutMs: 1 })
        .catch((error: unknown) => error);
      expect(timedOut).toMatchObject({ errno: 1205 }); // ER_LOCK_WAIT_TIMEOUT
      expect(await rows(waiter, 'SELECT @@SESSION.innodb_lock_wait_timeout AS wait')).toEqual([{ wait: '50' }]);
      await holder.query('COMMIT');
      await fence.transaction(waiter, resource, 6n, async () => undefined, { lockTimeoutMs: 1 });
      expect(await markOf(resource)).toBe(6n);
    } finally {
      await Promise.all([holder.end(), waiter.end()]);
    }
  });

  it('keeps names exactly under a hostile sql_mode: quotes, backslashes, case and a trailing space are different resources', async () => {
    const connection = await open();
    try {
      await connection.query("SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES,PAD_CHAR_TO_FULL_LENGTH'");
      const base = `it's \\ a "name"'); DROP TABLE x; -- ${randomUUID()}`;
      const names = [base, base.toUpperCase(), `${base} `, `${base}é`];
      for (const [i, name] of names.entries()) await fence.transaction(connection, name, BigInt(10 + i), async () => 0);
      for (const [i, name] of names.entries()) expect(await markOf(name)).toBe(BigInt(10 + i));
      const late = await fence.transaction(connection, base, 9n, async () => 0).catch((error: unknown) => error);
      expect(late).toMatchObject({ resource: base, token: 9n, mark: 10n });
    } finally {
      await connection.end();
    }
  });

  it('creates its table and procedures on first use in a database that has none, unless told not to', async () => {
    const fresh = `fence_${randomUUID().slice(0, 8)}`;
    await admin.query(`CREATE DATABASE \`${fresh}\``);
    try {
      const refused = await new MysqlFence({ database: fresh, createSchema: false })
        .transaction(admin, 'r', 1n, async () => undefined)
        .catch((error: unknown) => error);
      expect(refused).toMatchObject({ errno: 1305 }); // ER_SP_DOES_NOT_EXIST
      await new MysqlFence({ database: fresh }).transaction(admin, 'r', 3n, async () => undefined);
      const marks = await rows(admin, `SELECT CAST(mark AS CHAR) AS mark FROM \`${fresh}\`.baton_fence_marks`);
      expect(marks).toEqual([{ mark: '3' }]);
    } finally {
      await admin.query(`DROP DATABASE \`${fresh}\``);
    }
  });

  it('refuses bad arguments and unknown option keys with InvalidArgumentError before reaching the server', async () => {
    const sent: string[] = [];
    const counting = { query: (sql: string) => (sent.push(sql), admin.query(sql)) };
    expect(() => new MysqlFence({ database: 'a`; DROP' })).toThrow(/invalid database/);
    expect(() => new MysqlFence({ databse: 'x' } as never)).toThrow(/databse/);
    await expect(fence.advance(counting, '', 1n)).rejects.toThrow(/invalid resource/);
    await expect(fence.advance(counting, 'r', -1n)).rejects.toThrow(/invalid fencing token/);
    await expect(fence.advance(counting, 'r', 1 as never)).rejects.toThrow(/invalid fencing token/);
    await expect(fence.advance(counting, 'a\uD800b', 1n)).rejects.toThrow(/lone surrogate/);
    await expect(fence.advance(counting, '😀'.repeat(257), 1n)).rejects.toThrow(/invalid resource/);
    await expect(
      fence.transaction(counting, 'r', 1n, async () => undefined, { lockTimeout: 5 } as never),
    ).rejects.toThrow(/lockTimeout/);
    await expect(
      fence.transaction(counting, 'r', 1n, async () => undefined, { signal: AbortSignal.abort(new Error('stop')) }),
    ).rejects.toThrow('stop');
    expect(sent).toEqual([]);
  });
});
