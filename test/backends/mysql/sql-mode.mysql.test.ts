import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { LeaderElection } from '../../../recipes/election.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { mysqlFixtureOf, mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';

/** A database of its own, so that baton's procedures are created on a connection of the hostile mode. */
const DATABASE = `baton_sqlmode_${process.pid}`;
/** Modes that change how a statement parses or a value reads: backslashes, double quotes, `||`, CHAR padding. */
const HOSTILE = 'NO_BACKSLASH_ESCAPES,ANSI_QUOTES,PIPES_AS_CONCAT,PAD_CHAR_TO_FULL_LENGTH,IGNORE_SPACE';
const ID = `it's "quoted" \\ and \\' back\\\\slashed \\0 %_`;
const VALUE = `{"a": "it's", "b": "\\"", "c": "\\\\", "d": "\\n"}`;

function ownUrl(): string {
  const url = new URL(mysqlUrl());
  url.pathname = `/${DATABASE}`;
  return url.toString();
}

describe('MySQL: a server whose global sql_mode has NO_BACKSLASH_ESCAPES and ANSI_QUOTES', () => {
  let before = '';
  beforeAll(async () => {
    await withMysql(mysqlUrl(), async (connection) => {
      const [rows] = await connection.query('SELECT @@GLOBAL.sql_mode AS mode');
      before = (rows as { mode: string }[])[0]!.mode;
      await connection.query(`CREATE DATABASE ${DATABASE}`);
      await connection.query(`SET GLOBAL sql_mode = '${HOSTILE}'`);
    });
  });
  afterAll(async () => {
    await withMysql(mysqlUrl(), async (connection) => {
      await connection.query('SET GLOBAL sql_mode = ?', [before]);
      await connection.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
    });
  });
  const scope = useScope(() => mysqlFixtureOf(ownUrl(), 'mysql-sql-mode'));

  it('takes quotes and backslashes in ids and values as they are', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const leading = await new LeaderElection(a, 'quotes', { id: ID }).campaign();
    expect(await new LeaderElection(b, 'quotes', { id: 'observer' }).leader()).toBe(ID);
    await leading.guarded.put('json', VALUE);
    expect(await leading.guarded.get('json')).toBe(VALUE);
    await leading.guarded.delete('json');
    await leading.resign();
    const held = await new FairMutex(b, 'quotes-lock').acquire();
    await held.release();
  });
});
