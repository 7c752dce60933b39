import { randomUUID } from 'node:crypto';

import pg from 'pg';
import { describe, expect, it } from 'vitest';

import { postgresUrl } from '../../harness/backends/postgres.js';
import { runBaton } from '../../harness/run-cli.js';

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
