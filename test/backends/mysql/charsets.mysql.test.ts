import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { LeaderElection } from '../../../recipes/election.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { mysqlFixtureOf, mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';

/** A database whose default character set is latin1: the procedures created in it must not take it. */
const DATABASE = `baton_latin1_${process.pid}`;

function latin1Url(): string {
  const url = new URL(mysqlUrl());
  url.pathname = `/${DATABASE}`;
  return url.toString();
}

/** Values outside latin1: an emoji (outside the BMP too, four bytes in UTF-8) and CJK. */
const ID = 'candidate 🦊 候補';
const VALUE = 'period 🗓️ 2026-11 🚀 残り';

describe('MySQL: character sets, in a database whose default is latin1', () => {
  beforeAll(async () => {
    await withMysql(mysqlUrl(), (c) =>
      c.query(`CREATE DATABASE ${DATABASE} CHARACTER SET latin1 COLLATE latin1_swedish_ci`),
    );
  });
  afterAll(async () => {
    await withMysql(mysqlUrl(), (c) => c.query(`DROP DATABASE IF EXISTS ${DATABASE}`));
  });
  const scope = useScope(() => mysqlFixtureOf(latin1Url(), 'mysql-latin1'));

  it('two locks whose names differ only in case are two locks: both are held at once', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const upper = await new FairMutex(a, 'Jobs/Case').acquire({ timeoutMs: 0 });
    const lower = await new FairMutex(b, 'jobs/case').acquire({ timeoutMs: 0 });
    expect([upper.held, lower.held]).toEqual([true, true]);
    await Promise.all([upper.release(), lower.release()]);
  });

  it('an election id and a guarded value outside latin1 (emoji, CJK) come back as they were', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const leading = await new LeaderElection(a, 'charsets', { id: ID }).campaign();
    expect(await new LeaderElection(b, 'charsets', { id: 'observer' }).leader()).toBe(ID);
    await leading.guarded.put('note', VALUE);
    expect(await leading.guarded.get('note')).toBe(VALUE);
    await leading.guarded.delete('note');
    await leading.resign();
  });
});
