import { spawnSync } from 'node:child_process';

import { connect } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { mysql } from '../../../src/backends/mysql/index.js';
import { parseMysqlUrl } from '../../../src/backends/mysql/url.js';
import { mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { mariadbBinaries } from '../../harness/servers/install.js';

describe('MySQL: the schema baton schema --print gives', () => {
  it("is a script the mariadb client runs as it is, after which connect() finds baton's tables there", async () => {
    const url = new URL(mysqlUrl());
    const database = `baton_print_${process.pid}`;
    await withMysql(mysqlUrl(), async (connection) => void (await connection.query(`CREATE DATABASE ${database}`)));
    try {
      const script = mysql.cli.schema!.sql(parseMysqlUrl(mysqlUrl()));
      expect(script).toMatch(/^DELIMITER \/\//);
      const run = spawnSync(
        mariadbBinaries().client,
        ['--no-defaults', '-h', url.hostname, '-P', url.port, '-u', decodeURIComponent(url.username), database],
        { input: script, encoding: 'utf8', env: { ...process.env, MYSQL_PWD: decodeURIComponent(url.password) } },
      );
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      url.pathname = `/${database}`;
      // createSchema false: the tables must be there, made by the script alone.
      const session = await connect(url.toString(), { sessionTimeoutMs: 2_000, mysql: { createSchema: false } });
      try {
        await (await new FairMutex(session, 'printed').acquire()).release();
      } finally {
        await session.close();
      }
    } finally {
      await withMysql(mysqlUrl(), async (connection) => void (await connection.query(`DROP DATABASE ${database}`)));
    }
  });

  it('connect() with createSchema false refuses a database without the tables, and creates nothing', async () => {
    const url = new URL(mysqlUrl());
    const database = `baton_empty_${process.pid}`;
    await withMysql(mysqlUrl(), async (connection) => void (await connection.query(`CREATE DATABASE ${database}`)));
    try {
      url.pathname = `/${database}`;
      const error = await connect(url.toString(), { mysql: { createSchema: false } }).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/createSchema is false/);
      const tables = await withMysql(mysqlUrl(), async (connection) => {
        const [rows] = await connection.query(
          'SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = ?',
          [database],
        );
        return Number((rows as { n: number }[])[0]?.n);
      });
      expect(tables).toBe(0);
    } finally {
      await withMysql(mysqlUrl(), async (connection) => void (await connection.query(`DROP DATABASE ${database}`)));
    }
  });
});
