import { randomUUID } from 'node:crypto';

import { PostgresFence, STALE_TOKEN_SQLSTATE, StaleTokenError } from 'baton-locks/fence';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { postgresFixture, postgresUrl } from '../../harness/backends/postgres.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';
import { shuffled, uniqueTokens } from './tokens.js';

const schema = `fence_${randomUUID().slice(0, 8)}`;
const fence = new PostgresFence({ schema });
let admin: pg.Client;

/** Marks and the business table live in the user's database: here a schema of this file's own. */
beforeAll(async () => {
  admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  await fence.createSchema(admin);
  await fence.createSchema(admin); // idempotent: a DBA may apply it twice
  await admin.query(`CREATE TABLE ${schema}.ledger (period text PRIMARY KEY, settled_by text NOT NULL)`);
  await admin.query(`CREATE TABLE ${schema}.writes (seq bigserial PRIMARY KEY, resource text, token bigint)`);
});

afterAll(async () => {
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  await admin.end();
});

async function markOf(resource: string): Promise<bigint | undefined> {
  const { rows } = await admin.query<{ mark: string }>(`SELECT mark::text FROM ${schema}.marks WHERE resource = $1`, [
    resource,
  ]);
  return rows[0] === undefined ? undefined : BigInt(rows[0].mark);
}

/** The settlement write of the example: one row per period, fenced by the settlement lock's token. */
function settle(client: pg.Client, period: string, node: string, token: bigint): Promise<void> {
  return fence.transaction(client, `ledger/${period}`, token, async (c) => {
    await c.query(
      `INSERT INTO ${schema}.ledger VALUES ($1, $2) ON CONFLICT (period) DO UPDATE SET settled_by = EXCLUDED.settled_by`,
      [period, node],
    );
  });
}

describe('the PostgreSQL fence', () => {
  const scope = useScope(postgresFixture);

  it("refuses the late write of a holder whose session expired, after the next holder wrote; the holder's row is rolled back", async () => {
    const period = randomUUID().slice(0, 8);
    const [expiring, other] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(expiring, 'settlement').acquire();
    const next = new FairMutex(other, 'settlement').acquire({ timeoutMs: 20_000 });
    await eventually('the waiter queued', async () => (await backendOf(other).list('settlement')).length === 2);
    await scope.fixture.expire(expiring); // the holder is paused past its lease: its session is gone
    const successor = await next;
    const client = new pg.Client({ connectionString: postgresUrl() });
    await client.connect();
    try {
      await settle(client, period, 'node-b', successor.fencingToken);
      const late = await settle(client, period, 'node-a', held.fencingToken).catch((error: unknown) => error);
      expect(late).toBeInstanceOf(StaleTokenError);
      expect(late).toMatchObject({
        code: 'STALE_TOKEN',
        resource: `ledger/${period}`,
        token: held.fencingToken,
        mark: successor.fencingToken,
      });
      expect((late as StaleTokenError).cause).toMatchObject({ code: STALE_TOKEN_SQLSTATE });
      const { rows } = await client.query(`SELECT settled_by FROM ${schema}.ledger WHERE period = $1`, [period]);
      expect(rows).toEqual([{ settled_by: 'node-b' }]);
      expect(await markOf(`ledger/${period}`)).toBe(successor.fencingToken);
      await settle(client, period, 'node-b', successor.fencingToken); // the same holder writes again: passes
    } finally {
      await client.end();
      await successor.release();
    }
  });

  it('raises SQLSTATE BF001 with a JSON DETAIL below the mark, passes an equal token, and leaves the mark when the transaction rolls back', async () => {
    const resource = `r/${randomUUID()}`;
    await admin.query('BEGIN');
    expect((await admin.query(`SELECT ${schema}.advance($1, 10) AS mark`, [resource])).rows).toEqual([{ mark: '10' }]);
    expect((await admin.query(`SELECT ${schema}.advance($1, 10) AS mark`, [resource])).rows).toEqual([{ mark: '10' }]);
    const raised = await admin.query(`SELECT ${schema}.advance($1, 9)`, [resource]).catch((error: unknown) => error);
    await admin.query('ROLLBACK');
    expect(raised).toMatchObject({ code: 'BF001' });
    expect(JSON.parse((raised as { detail: string }).detail)).toEqual({ resource, token: '9', mark: '10' });
    expect(await markOf(resource), 'the rolled-back transaction moved no mark').toBeUndefined();
    // A business write that fails after the fence passed takes the mark's move with it.
    const failed = await fence
      .transaction(admin, resource, 20n, () => Promise.reject(new Error('the write failed')))
      .catch((error: unknown) => error);
    expect(failed).toMatchObject({ message: 'the write failed' });
    expect(await markOf(resource)).toBeUndefined();
    await fence.transaction(admin, resource, 5n, async () => undefined);
    expect(await markOf(resource)).toBe(5n);
  });

  it('never moves a mark backwards under 60 concurrent writers with tokens in random order; every accepted write was at or above the mark', async () => {
    const resource = `concurrent/${randomUUID()}`;
    const pool = new pg.Pool({ connectionString: postgresUrl(), max: 8 });
    const tokens = shuffled(uniqueTokens(60));
    try {
      const outcomes = await Promise.all(
        tokens.map((token) =>
          fence
            .poolTransaction(pool, resource, token, async (client) => {
              await client.query(`INSERT INTO ${schema}.writes (resource, token) VALUES ($1, $2)`, [
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
      const { rows } = await admin.query<{ token: string }>(
        `SELECT token::text FROM ${schema}.writes WHERE resource = $1 ORDER BY seq`,
        [resource],
      );
      const accepted = rows.map((row) => BigInt(row.token));
      expect(accepted.length).toBe(outcomes.filter((outcome) => outcome === 'accepted').length);
      for (let i = 1; i < accepted.length; i += 1) expect(accepted[i]! > accepted[i - 1]!).toBe(true);
      const highest = tokens.reduce((a, b) => (a > b ? a : b));
      expect(await markOf(resource)).toBe(highest);
      expect(accepted.at(-1)).toBe(highest);
    } finally {
      await pool.end();
    }
  });

  it('sends BEGIN and the fence in one round trip: a fenced transaction of one statement is three queries, as a plain one', async () => {
    const resource = `trips/${randomUUID()}`;
    const sent: string[] = [];
    const counting = {
      query: (text: string, values?: unknown[]) => (sent.push(text), admin.query(text, values)),
    };
    await fence.transaction(counting, resource, 7n, (c) => c.query('SELECT 1'), { lockTimeoutMs: 5_000 });
    expect(sent).toEqual([expect.stringMatching(/^BEGIN;.*lock_timeout = 5000;.*advance\(/), 'SELECT 1', 'COMMIT']);
    expect(await markOf(resource)).toBe(7n);
  });

  it('keeps a resource name with quotes, backslashes and a comment exactly, and refuses one with a NUL before sending anything', async () => {
    const resource = `it's \\ a \\' name'); DROP TABLE x; -- ${randomUUID()}`;
    await fence.transaction(admin, resource, 8n, async () => undefined);
    expect(await markOf(resource)).toBe(8n);
    const late = await fence.transaction(admin, resource, 7n, async () => undefined).catch((error: unknown) => error);
    expect(late).toBeInstanceOf(StaleTokenError);
    expect(late).toMatchObject({ resource, token: 7n, mark: 8n });
    const sent: string[] = [];
    const counting = { query: (text: string) => (sent.push(text), admin.query(text)) };
    await expect(fence.transaction(counting, 'a\0b', 1n, async () => undefined)).rejects.toThrow(/NUL/);
    expect(sent).toEqual([]);
  });

  it('refuses bad arguments and unknown option keys with InvalidArgumentError before reaching the server', async () => {
    expect(() => new PostgresFence({ schema: 'Robert"; DROP' })).toThrow(/invalid schema/);
    expect(() => new PostgresFence({ shema: 'x' } as never)).toThrow(/shema/);
    await expect(fence.advance(admin, '', 1n)).rejects.toThrow(/invalid resource/);
    await expect(fence.advance(admin, 'r', -1n)).rejects.toThrow(/invalid fencing token/);
    await expect(fence.advance(admin, 'r', 1 as never)).rejects.toThrow(/invalid fencing token/);
    await expect(fence.transaction(admin, 'r', 1n, async () => undefined, { lockTimeout: 5 } as never)).rejects.toThrow(
      /lockTimeout/,
    );
  });
});
