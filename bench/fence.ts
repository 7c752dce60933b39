/**
 * The fence's cost over the plain write, measured in the same run: on PostgreSQL the user's
 * transaction with and without the fence's statement (sent in one round trip either way), and
 * `PostgresFence.transaction` (BEGIN with the fence, the UPDATE, COMMIT) beside the plain transaction
 * sent statement by statement; on Redis the fenced SET script beside a plain SET; on MySQL/MariaDB
 * `MysqlFence.transaction` (CALL baton_fence_begin, the UPDATE, COMMIT) beside the plain transaction
 * (START TRANSACTION, the UPDATE, COMMIT): three round trips each.
 */
import { Redis } from 'ioredis';
import mysql2 from 'mysql2/promise';
import pg from 'pg';

import { MysqlFence, PostgresFence, RedisFence } from '../src/fence/index.js';
import { startMysql } from '../test/harness/servers/mysql.js';
import type { Case } from './case.js';
import { times, timesRange } from './report.js';
import { alternateBlocks, type Block, flatBlocks, ratioInterval, summarize, type Summary, timed } from './stats.js';
import { heading, printCases } from './table.js';

const ITEM = 15;
const SCHEMA = 'bench_fence';

/** Runs the blocks, prints them, and returns each case's summary with its blocks for the intervals. */
async function measure(
  contenders: Record<string, Block>,
  size: { blocks: number; perBlock: number; warmup: number },
  reference: string,
): Promise<{ find: (name: string) => Summary; blocks: Record<string, number[][]>; results: Summary[] }> {
  const blocks = await alternateBlocks(contenders, size);
  const results = Object.entries(flatBlocks(blocks)).map(([name, values]) => summarize(name, values));
  const find = (name: string): Summary => results.find((r) => r.name === name)!;
  printCases(results, { [reference]: find(reference) });
  return { find, blocks, results };
}

/** The PostgreSQL fence: one UPDATE's transaction, plain and fenced. */
export const postgresFence: Case = {
  name: 'postgres.fence',
  async run({ postgres, size, report }) {
    const client = new pg.Client({ connectionString: await postgres() });
    await client.connect();
    const fence = new PostgresFence({ schema: SCHEMA });
    try {
      await fence.createSchema(client);
      await client.query(`CREATE TABLE IF NOT EXISTS ${SCHEMA}.ledger (id int PRIMARY KEY, v bigint NOT NULL)`);
      await client.query(`INSERT INTO ${SCHEMA}.ledger VALUES (1, 0) ON CONFLICT (id) DO NOTHING`);
      let token = 0n;
      const update = `UPDATE ${SCHEMA}.ledger SET v = v + 1 WHERE id = 1`;
      const markUpdate = (t: bigint): string => `UPDATE ${SCHEMA}.marks SET mark = ${t} WHERE resource = 'bench'`;
      const contenders: Record<string, Block> = {
        'plain transaction (one round trip)': timed(async () => void (await client.query(`BEGIN; ${update}; COMMIT`))),
        'fenced transaction (one round trip)': timed(async () => {
          token += 1n;
          await client.query(`BEGIN; SELECT ${SCHEMA}.advance('bench', ${token}); ${update}; COMMIT`);
        }),
        // The floor of any fence that keeps its mark in the database: the same transaction with a second
        // plain UPDATE (of the mark's row) in it, no function, no check.
        'plain transaction with a second UPDATE (one round trip)': timed(async () => {
          token += 1n;
          await client.query(`BEGIN; ${markUpdate(token)}; ${update}; COMMIT`);
        }),
        'plain transaction (BEGIN, UPDATE, COMMIT)': timed(async () => {
          await client.query('BEGIN');
          await client.query(update);
          await client.query('COMMIT');
        }),
        'PostgresFence.transaction (BEGIN and fence, UPDATE, COMMIT)': timed(async () => {
          token += 1n;
          await fence.transaction(client, 'bench', token, (c) => c.query(update));
        }),
      };
      heading(`${ITEM}. PostgreSQL fence (standalone, fsync on)`);
      const { find, blocks, results } = await measure(contenders, size, 'plain transaction (one round trip)');
      const ratio = (name: string): number => find(name).medianMs / find('plain transaction (one round trip)').medianMs;
      const interval = ratioInterval(
        blocks['fenced transaction (one round trip)']!,
        blocks['plain transaction (one round trip)']!,
      );
      report.atMost(
        ITEM,
        'PostgreSQL fenced / plain UPDATE transaction (same round trip)',
        ratio('fenced transaction (one round trip)'),
        1.1,
        times,
        `(95% ${timesRange(interval)})`,
      );
      const floor = find('plain transaction with a second UPDATE (one round trip)').medianMs;
      const overFloor = find('fenced transaction (one round trip)').medianMs / floor;
      report.info(
        ITEM,
        'PostgreSQL fenced transaction / the same with a plain second UPDATE (the floor of a stored mark)',
        overFloor,
        `${times(overFloor)} (that floor is ${times(floor / find('plain transaction (one round trip)').medianMs)} the plain transaction)`,
      );
      const helper =
        find('PostgresFence.transaction (BEGIN and fence, UPDATE, COMMIT)').medianMs /
        find('plain transaction (BEGIN, UPDATE, COMMIT)').medianMs;
      const helperInterval = ratioInterval(
        blocks['PostgresFence.transaction (BEGIN and fence, UPDATE, COMMIT)']!,
        blocks['plain transaction (BEGIN, UPDATE, COMMIT)']!,
      );
      report.info(
        ITEM,
        'PostgreSQL PostgresFence.transaction / plain, three round trips each',
        helper,
        `${times(helper)} (95% ${timesRange(helperInterval)})`,
      );
      return { results, interval };
    } finally {
      await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`).catch(() => undefined);
      await client.end();
    }
  },
};

/** The Redis fence: the fenced SET script beside a plain SET of the same key. */
export const redisFence: Case = {
  name: 'redis.fence',
  async run({ redis, size, report }) {
    const client = new Redis(await redis());
    const fence = new RedisFence(client);
    const key = 'bench:{bench-fence}:value';
    try {
      let token = 0n;
      const contenders: Record<string, Block> = {
        'plain SET': timed(async () => void (await client.set(key, 'v'))),
        'RedisFence.set (one script)': timed(async () => {
          token += 1n;
          await fence.set('bench-fence', token, key, 'v');
        }),
      };
      heading(`${ITEM}. Redis fence (standalone)`);
      const { find, blocks, results } = await measure(contenders, size, 'plain SET');
      const ratio = find('RedisFence.set (one script)').medianMs / find('plain SET').medianMs;
      const interval = ratioInterval(blocks['RedisFence.set (one script)']!, blocks['plain SET']!);
      report.info(ITEM, 'Redis fenced SET script / plain SET', ratio, `${times(ratio)} (95% ${timesRange(interval)})`);
      return { results, interval };
    } finally {
      await client.del(key, RedisFence.markKey('bench-fence'));
      client.disconnect();
    }
  },
};

/** A MariaDB for the MySQL fence: BATON_BENCH_MYSQL, or one started as the test harness does (and stopped). */
async function mysqlServer(): Promise<{ url: string; stop: () => Promise<void> }> {
  const external = process.env.BATON_BENCH_MYSQL;
  if (external !== undefined && external !== '') return { url: external, stop: async () => undefined };
  const server = await startMysql();
  return { url: server.url, stop: () => server.stop() };
}

/** The MySQL fence: one UPDATE's transaction, plain and through `MysqlFence.transaction`. */
export const mysqlFence: Case = {
  name: 'mysql.fence',
  async run({ size, report }) {
    const server = await mysqlServer();
    const connection = await mysql2.createConnection({ uri: server.url });
    const fence = new MysqlFence({ database: SCHEMA });
    try {
      await connection.query(`CREATE DATABASE IF NOT EXISTS ${SCHEMA}`);
      await fence.createSchema(connection);
      await connection.query(`CREATE TABLE IF NOT EXISTS ${SCHEMA}.ledger (id INT PRIMARY KEY, v BIGINT NOT NULL)`);
      await connection.query(`INSERT IGNORE INTO ${SCHEMA}.ledger VALUES (1, 0)`);
      let token = 0n;
      const update = `UPDATE ${SCHEMA}.ledger SET v = v + 1 WHERE id = 1`;
      const plain = 'plain transaction (START TRANSACTION, UPDATE, COMMIT)';
      const fenced = 'MysqlFence.transaction (CALL begin with the fence, UPDATE, COMMIT)';
      const contenders: Record<string, Block> = {
        [plain]: timed(async () => {
          await connection.query('START TRANSACTION');
          await connection.query(update);
          await connection.query('COMMIT');
        }),
        [fenced]: timed(async () => {
          token += 1n;
          await fence.transaction(connection, 'bench', token, (c) => c.query(update));
        }),
      };
      heading(`${ITEM}. MySQL/MariaDB fence (${external() ? 'BATON_BENCH_MYSQL' : "the harness's MariaDB, no fsync"})`);
      const { find, blocks, results } = await measure(contenders, size, plain);
      const ratio = find(fenced).medianMs / find(plain).medianMs;
      const interval = ratioInterval(blocks[fenced]!, blocks[plain]!);
      report.atMost(
        ITEM,
        'MySQL MysqlFence.transaction / plain UPDATE transaction, three round trips each',
        ratio,
        1.1,
        times,
        `(95% ${timesRange(interval)})`,
      );
      return { results, interval };
    } finally {
      await connection.query(`DROP DATABASE IF EXISTS ${SCHEMA}`).catch(() => undefined);
      await connection.end();
      await server.stop();
    }
  },
};

function external(): boolean {
  return (process.env.BATON_BENCH_MYSQL ?? '') !== '';
}
