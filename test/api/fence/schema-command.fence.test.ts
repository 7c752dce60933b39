import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';

import mysql2 from 'mysql2/promise';
import pg from 'pg';
import { describe, expect, it } from 'vitest';

import { mysqlUrl } from '../../harness/backends/mysql.js';
import { postgresUrl } from '../../harness/backends/postgres.js';
import { runBaton } from '../../harness/run-cli.js';
import { mariadbBinaries } from '../../harness/servers/install.js';

/** Runs `script` with the mariadb command-line client, as a DBA would, in a session whose sql_mode is hostile. */
function applyWithClient(url: string, script: string): { status: number | null; stderr: string } {
  const parsed = new URL(url);
  const run = spawnSync(
    mariadbBinaries().client,
    [
      '--no-defaults',
      '-h',
      parsed.hostname,
      '-P',
      parsed.port,
      '-u',
      decodeURIComponent(parsed.username),
      "--init-command=SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'",
      parsed.pathname.slice(1),
    ],
    {
      input: script,
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, MYSQL_PWD: decodeURIComponent(parsed.password) },
    },
  );
  return { status: run.status, stderr: run.stderr };
}

describe('baton fence-schema', () => {
  it('prints SQL a DBA can apply as it is, after which advance() fences; refuses no --print and other backends with exit 2', async () => {
    const schema = `fence_cli_${randomUUID().slice(0, 8)}`;
    const printed = await runBaton(['fence-schema', '--print', '--schema', schema]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^BEGIN;\n[\s\S]*COMMIT;\n$/);
    const client = new pg.Client({ connectionString: postgresUrl() });
    await client.connect();
    try {
      await client.query(printed.stdout);
      await client.query(`SELECT ${schema}.advance('r', 5)`);
      await expect(client.query(`SELECT ${schema}.advance('r', 4)`)).rejects.toMatchObject({ code: 'BF001' });
    } finally {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
    const unprinted = await runBaton(['fence-schema']);
    expect(unprinted.code).toBe(2);
    expect(unprinted.stderr).toMatch(/--print/);
    const redis = await runBaton(['fence-schema', '--print', '--backend', 'redis']);
    expect(redis.code).toBe(2);
    expect(redis.stderr).toMatch(/need no schema/);
    const bad = await runBaton(['fence-schema', '--print', '--schema', 'x; DROP']);
    expect(bad.code).toBe(2);
  });
});

describe('baton fence-schema --backend mysql', () => {
  it('prints a script the mariadb client applies as it is, even under ANSI_QUOTES and NO_BACKSLASH_ESCAPES, after which the procedures fence under their own pinned sql_mode', async () => {
    const database = `fence_cli_${randomUUID().slice(0, 8)}`;
    const printed = await runBaton(['fence-schema', '--print', '--backend', 'mysql', '--schema', database]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^DELIMITER \/\/\n[\s\S]*DELIMITER ;\n$/);
    const connection = await mysql2.createConnection({ uri: mysqlUrl() });
    try {
      await connection.query(`CREATE DATABASE \`${database}\``);
      for (let i = 0; i < 2; i += 1)
        expect(applyWithClient(mysqlUrl(), printed.stdout)).toEqual({ status: 0, stderr: '' });
      await connection.query("SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'");
      await connection.query(`CALL \`${database}\`.baton_fence_advance('r', 5, NULL)`);
      await expect(connection.query(`CALL \`${database}\`.baton_fence_advance('r', 4, NULL)`)).rejects.toMatchObject({
        sqlState: 'BF001',
      });
      const [modes] = await connection.query(
        'SELECT ROUTINE_NAME AS name, SQL_MODE AS mode FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? ORDER BY 1',
        [database],
      );
      const pinned = 'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';
      expect(modes).toEqual([
        { name: 'baton_fence_advance', mode: pinned },
        { name: 'baton_fence_begin', mode: pinned },
      ]);
    } finally {
      await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await connection.end();
    }
    const bad = await runBaton(['fence-schema', '--print', '--backend', 'mysql', '--schema', 'x`; DROP']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/invalid database/);
  });
});
