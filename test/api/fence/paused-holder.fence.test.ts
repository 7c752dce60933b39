import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

import { MysqlFence, PostgresFence, RedisFence } from 'baton-locks/fence';
import { Redis } from 'ioredis';
import mysql2 from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { mysqlFixture, mysqlUrl } from '../../harness/backends/mysql.js';
import { postgresFixture, postgresUrl } from '../../harness/backends/postgres.js';
import { redisFixture } from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { forkWorker } from '../../harness/contention/run-contention.js';
import { backendOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';
import type { FencedHolderMessage } from '../../harness/workers/fenced-holder-worker.js';

const WORKER = fileURLToPath(new URL('../../harness/workers/fenced-holder-worker.ts', import.meta.url));
const schema = `fence_${randomUUID().slice(0, 8)}`;
const fence = new PostgresFence({ schema });
/** The MySQL fence's database has the PostgreSQL schema's name. */
const mysqlFence = new MysqlFence({ database: schema });
let redis: Redis;

beforeAll(async () => {
  const admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  await fence.createSchema(admin);
  await admin.query(`CREATE TABLE ${schema}.ledger (period text PRIMARY KEY, settled_by text NOT NULL)`);
  await admin.end();
  redis = new Redis(inject('redisStandalone').url);
  const mysql = await mysql2.createConnection({ uri: mysqlUrl(), supportBigNumbers: true, bigNumberStrings: true });
  await mysql.query(`CREATE DATABASE \`${schema}\``);
  await mysqlFence.createSchema(mysql);
  await mysql.query(
    `CREATE TABLE \`${schema}\`.ledger (period VARCHAR(64) PRIMARY KEY, settled_by VARCHAR(64) NOT NULL) ENGINE=InnoDB`,
  );
  await mysql.end();
});

afterAll(async () => {
  const admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  await admin.end();
  await redis.quit();
  const mysql = await mysql2.createConnection({ uri: mysqlUrl() });
  await mysql.query(`DROP DATABASE \`${schema}\``);
  await mysql.end();
});

/** The worker's messages, one promise per kind, and its process (to freeze and resume it). */
function startHolder(fixture: Fixture, namespace: string, resource: string) {
  let told: (message: FencedHolderMessage) => void = () => undefined;
  const held = new Promise<string>((resolve) => (told = (m) => m.type === 'held' && resolve(m.token)));
  let wrote: (message: Extract<FencedHolderMessage, { type: 'wrote' }>) => void = () => undefined;
  const written = new Promise<Extract<FencedHolderMessage, { type: 'wrote' }>>((resolve) => (wrote = resolve));
  const args = [
    fixture.url(namespace),
    JSON.stringify(fixture.options),
    'settlement',
    postgresUrl(),
    schema,
    inject('redisStandalone').url,
    resource,
    mysqlUrl(),
  ];
  const { child, exited } = forkWorker(WORKER, args, 'fenced holder', 120_000, (raw) => {
    const message = raw as FencedHolderMessage;
    if (message.type === 'held') told(message);
    else wrote(message);
  });
  exited.catch(() => undefined);
  return { child, exited, held, written };
}

function kill(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGCONT');
  child.kill('SIGKILL');
}

/**
 * A holder in its own process is frozen (SIGSTOP) while it holds the lock: it sends nothing, so the
 * server expires its session and grants the next holder, who writes through the fences. Resumed, the
 * old holder writes with its token as if nothing had happened; all three resources refuse it themselves.
 */
describe.concurrent.each([
  { name: 'PostgreSQL', fixture: postgresFixture },
  { name: 'Redis', fixture: redisFixture },
  { name: 'ZooKeeper', fixture: () => zkFixture('zkStandalone') },
  { name: 'etcd', fixture: () => etcdFixture('etcdStandalone') },
  { name: 'MySQL', fixture: mysqlFixture },
])('a paused holder of a lock on $name', ({ fixture }: { fixture: () => Fixture }) => {
  const scope = useScope(fixture);

  it('has its late write refused by the PostgreSQL, the Redis and the MySQL fence after the next holder wrote', async () => {
    const resource = `ledger-${randomUUID().slice(0, 8)}`;
    // Connections of this test's own: the backends' tests run side by side, and a transaction needs its connection.
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    const mysql = await mysql2.createConnection({ uri: mysqlUrl(), supportBigNumbers: true, bigNumberStrings: true });
    const holder = startHolder(scope.fixture, scope.namespace, resource);
    let successor: Awaited<ReturnType<FairMutex['acquire']>> | undefined;
    try {
      const oldToken = BigInt(await holder.held);
      const other = await scope.open();
      const next = new FairMutex(other, 'settlement').acquire({ timeoutMs: scope.fixture.lossDeadlineMs * 2 });
      await eventually(
        'queued behind the holder',
        async () => (await backendOf(other).list('settlement')).length === 2,
      );
      holder.child.kill('SIGSTOP'); // as a long GC pause: no heartbeat, no write
      successor = await next; // granted once the server expired the frozen holder's session
      expect(successor.fencingToken).toBeGreaterThan(oldToken);
      await fence.transaction(admin, resource, successor.fencingToken, (client) =>
        client.query(`INSERT INTO ${schema}.ledger VALUES ($1, 'next')`, [resource]),
      );
      await new RedisFence(redis).set(resource, successor.fencingToken, `app:{${resource}}:settled`, 'next');
      await mysqlFence.transaction(mysql, resource, successor.fencingToken, (connection) =>
        connection.query(`INSERT INTO \`${schema}\`.ledger VALUES (?, 'next')`, [resource]),
      );
      holder.child.kill('SIGCONT');
      holder.child.send('write');
      const late = await holder.written;
      const refusal = `StaleTokenError: stale fencing token ${oldToken} for "${resource}": the resource has accepted token ${successor.fencingToken}; the write was refused`;
      expect(late).toEqual({ type: 'wrote', postgres: refusal, redis: refusal, mysql: refusal });
      const { rows } = await admin.query(`SELECT settled_by FROM ${schema}.ledger WHERE period = $1`, [resource]);
      expect(rows).toEqual([{ settled_by: 'next' }]);
      expect(await redis.get(`app:{${resource}}:settled`)).toBe('next');
      const [settled] = await mysql.query(`SELECT settled_by FROM \`${schema}\`.ledger WHERE period = ?`, [resource]);
      expect(settled).toEqual([{ settled_by: 'next' }]);
      await holder.exited;
    } finally {
      kill(holder.child);
      await successor?.release();
      await redis.del(`app:{${resource}}:settled`, RedisFence.markKey(resource));
      await admin.end();
      await mysql.end();
    }
  }, 120_000);
});
