import { connect } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { BackendError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { mysqlFixture } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';
import { track } from '../../harness/wait.js';

/** A counter far ahead of the server's clock in µs, so that the next token of a queue is `AHEAD + 1`. */
const AHEAD = 9_000_000_000_000_000n;

/** Runs `use` with the URL of a new empty database, dropped afterwards. */
async function withDatabase(name: string, use: (url: string) => Promise<void>): Promise<void> {
  const database = `baton_${name}_${process.pid}`;
  await withMysql(mysqlUrl(), async (connection) => void (await connection.query(`CREATE DATABASE ${database}`)));
  try {
    const url = new URL(mysqlUrl());
    url.pathname = `/${database}`;
    await use(url.toString());
  } finally {
    await withMysql(mysqlUrl(), async (connection) => void (await connection.query(`DROP DATABASE ${database}`)));
  }
}

async function tablesOf(url: string): Promise<string[]> {
  return withMysql(url, async (connection) => {
    const [rows] = await connection.query(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1',
    );
    return (rows as { name: string }[]).map((row) => row.name);
  });
}

describe('MySQL: tokens are unique per queue only, and the schema says so', () => {
  const scope = useScope(mysqlFixture);

  it('two queues whose counters give the same token: both are granted, and a waiter of one is not held by the other', async () => {
    const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
    await withMysql(mysqlUrl(), async (connection) => {
      const rows = ['same-a', 'same-b'].map((queue) => [scope.namespace, queue, AHEAD.toString()]);
      await connection.query('INSERT INTO baton_counters (namespace, queue, n) VALUES ?', [rows]);
    });
    const first = await new FairMutex(a, 'same-a').acquire();
    const second = await new FairMutex(b, 'same-b').acquire({ timeoutMs: 0 });
    expect(first.fencingToken).toBe(AHEAD + 1n);
    expect(second.fencingToken).toBe(AHEAD + 1n);
    // c waits behind b's entry, whose token a's entry in the other queue also has: b's release must wake c.
    const waiting = track(new FairMutex(c, 'same-b').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
    await second.release();
    const third = await waiting.promise;
    expect(third.fencingToken).toBe(AHEAD + 2n);
    expect(first.held).toBe(true);
    await third.release();
    await first.release();
  });

  it('refuses a schema of version 1 with a clear error, and changes nothing', async () => {
    await withDatabase('v1', async (url) => {
      await withMysql(url, async (connection) => {
        await connection.query('CREATE TABLE baton_version (version INT NOT NULL) ENGINE=InnoDB');
        await connection.query('INSERT INTO baton_version (version) VALUES (1)');
      });
      const error = await connect(url, { sessionTimeoutMs: 2_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendError);
      expect((error as Error).message).toMatch(/schema version 1; this baton needs version 2 and migrates none/);
      expect(await tablesOf(url)).toEqual(['baton_version']);
    });
  });

  it("refuses version 1's entries table left by a creation cut short before its version row", async () => {
    await withDatabase('v1cut', async (url) => {
      await withMysql(url, async (connection) => {
        await connection.query(
          'CREATE TABLE baton_entries (token BIGINT NOT NULL PRIMARY KEY, `key` VARCHAR(64) NOT NULL UNIQUE) ENGINE=InnoDB',
        );
      });
      const error = await connect(url, { sessionTimeoutMs: 2_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendError);
      expect((error as Error).message).toMatch(/schema version older \(no version row\)/);
      expect(await tablesOf(url)).toEqual(['baton_entries']);
    });
  });
});
