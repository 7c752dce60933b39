import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';

import { connect } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { PostgresUrl } from '../../../src/backends/postgres/url.js';
import { parseUrl } from '../../../src/url.js';
import { postgresUrl, withParams, withPostgres } from '../../harness/backends/postgres.js';
import { runBaton } from '../../harness/run-cli.js';
import { PASSWORD_ROLE } from '../../harness/servers/postgres.js';

/** The password role's password on the harness's server (the same as connect.postgres.test.ts sets). */
const PASSWORD = 'pg-secret-5d0c81';

/** Everything an error lets a user or a log see. */
function exposed(error: unknown): string {
  return [
    String(error),
    (error as Error).stack ?? '',
    JSON.stringify((error as { value?: unknown }).value ?? null),
    inspect(error, { depth: 20, showHidden: true }),
  ].join('\n');
}

describe('PostgreSQL URLs whose password holds a character that ends the user-info part', () => {
  const secret = 'sEcReT';
  for (const url of [
    `postgres://u:q7Z/${secret}@h/db`,
    `postgres://u:q7Z#${secret}@h/db`,
    `postgres://u:q7Z?${secret}@h/db`,
    `postgres://u:q7Z@${secret}@h/db#x`,
    `postgres://u:1234/${secret}@h/db?namespace=a//b`,
  ]) {
    it(`${url.replace(secret, '…')}: refused without showing any part of the password`, () => {
      let error: unknown;
      try {
        parseUrl(url);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(exposed(error)).not.toContain(secret);
      expect(exposed(error)).not.toContain('q7Z');
    });
  }

  it('a password with an @ in a URL that parses is shown as ***', () => {
    expect((parseUrl(`postgres://u:p@${secret}@h/db`).target as PostgresUrl).shown).toBe('postgres://u:***@h/db');
  });
});

describe('baton schema and baton inspect: the password from PGPASSWORD, a warning for one in the URL', () => {
  const schema = `p_${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    await withPostgres(postgresUrl(), async (client) => {
      await client.query(
        `DO $$ BEGIN CREATE ROLE ${PASSWORD_ROLE} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
      );
      await client.query(`ALTER ROLE ${PASSWORD_ROLE} LOGIN PASSWORD '${PASSWORD}'`);
      await client.query(`GRANT CREATE ON DATABASE postgres TO ${PASSWORD_ROLE}`);
    });
  });
  afterAll(async () => {
    await withPostgres(postgresUrl(), (client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  });

  it('baton schema takes the password from PGPASSWORD; a password in the URL works but is warned about, and never printed', async () => {
    const url = new URL(withParams(postgresUrl(), { schema }));
    url.username = PASSWORD_ROLE;
    const created = await runBaton(['schema', url.toString()], { PGPASSWORD: PASSWORD });
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('created');
    expect(created.stderr).not.toContain('warning');
    url.password = PASSWORD;
    const again = await runBaton(['schema', url.toString()]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/warning: the URL holds a password.*PGPASSWORD/);
    expect(again.stdout + again.stderr).not.toContain(PASSWORD);
    const inspected = await runBaton(['inspect', url.toString(), 'nothing']);
    expect(inspected.stderr).toMatch(/warning: the URL holds a password/);
    expect(inspected.stdout + inspected.stderr).not.toContain(PASSWORD);
    await (await connect(url.toString(), { createSchema: false, sessionTimeoutMs: 2_000 })).close();
  });
});
