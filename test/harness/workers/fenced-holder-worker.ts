import { Redis } from 'ioredis';
import mysql2 from 'mysql2/promise';
import pg from 'pg';

import { FairMutex } from '../../../recipes/mutex.js';
import { connect } from '../../../src/connect.js';
import { MysqlFence, PostgresFence, RedisFence } from '../../../src/fence/index.js';

/**
 * Child-process side of the paused-holder fence test: argv = lock-url connect-options-json lock-name
 * postgres-url fence-schema redis-url resource mysql-url. It takes the lock, tells its token, and on the
 * parent's 'write' message writes with that token through the three fences (the MySQL fence's database
 * is named as the PostgreSQL schema), whatever became of its lock meanwhile (a
 * holder that does not know it was paused), then tells how each write went.
 */
const [
  lockUrl = '',
  options = '{}',
  lockName = '',
  postgresUrl = '',
  schema = '',
  redisUrl = '',
  resource = '',
  mysqlUrl = '',
] = process.argv.slice(2);

/** What the parent hears: the token held, then each fence's answer (`ok` or the error's name and message). */
export type FencedHolderMessage =
  | { readonly type: 'held'; readonly token: string }
  | { readonly type: 'wrote'; readonly postgres: string; readonly redis: string; readonly mysql: string };

function outcome(write: Promise<unknown>): Promise<string> {
  return write.then(
    () => 'ok',
    (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error)),
  );
}

async function main(): Promise<void> {
  const database = new pg.Client({ connectionString: postgresUrl });
  await database.connect();
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  const mysql = await mysql2.createConnection({ uri: mysqlUrl, supportBigNumbers: true, bigNumberStrings: true });
  const session = await connect(lockUrl, JSON.parse(options) as object);
  const lock = await new FairMutex(session, lockName).acquire();
  const token = lock.fencingToken;
  await new Promise<void>((resolve) => {
    process.once('message', () => resolve());
    process.send?.({ type: 'held', token: token.toString() } satisfies FencedHolderMessage);
  });
  const postgres = await outcome(
    new PostgresFence({ schema }).transaction(database, resource, token, (client) =>
      client.query(
        `INSERT INTO ${schema}.ledger VALUES ($1, 'late') ON CONFLICT (period) DO UPDATE SET settled_by = 'late'`,
        [resource],
      ),
    ),
  );
  const written = await outcome(new RedisFence(redis).set(resource, token, `app:{${resource}}:settled`, 'late'));
  const mysqlWrite = await outcome(
    new MysqlFence({ database: schema }).transaction(mysql, resource, token, (connection) =>
      connection.query(
        `INSERT INTO \`${schema}\`.ledger VALUES (?, 'late') ON DUPLICATE KEY UPDATE settled_by = 'late'`,
        [resource],
      ),
    ),
  );
  process.send?.({ type: 'wrote', postgres, redis: written, mysql: mysqlWrite } satisfies FencedHolderMessage);
  await Promise.allSettled([lock.release(), session.close(), database.end(), redis.quit(), mysql.end()]);
  process.disconnect();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
