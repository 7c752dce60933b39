import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';

import { connect, postgresProbeOf } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AccessDeniedError, BackendError, InvalidArgumentError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { parsePostgresUrl } from '../../../src/backends/postgres/url.js';
import { runInspect } from '../../../src/inspect.js';
import { postgresUrl, withParams, withPostgres } from '../../harness/backends/postgres.js';
import { runBaton } from '../../harness/run-cli.js';
import { PASSWORD_ROLE, type PgServer, startPostgres } from '../../harness/servers/postgres.js';
import { makeCertificates, type TestCertificates } from '../../harness/tls-certificates.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PASSWORD = 'pg-secret-5d0c81';
const WRONG = 'pg-wrong-e3a9f7';

/** A schema of the test's own, dropped afterwards. */
function freshSchema(): string {
  return `t_${randomUUID().slice(0, 8)}`;
}

describe('postgres:// URLs, credentials and the schema', () => {
  const schemas: string[] = [];
  const texts: string[] = [];
  const schemaUrl = (schema: string, namespace = 'connect'): string => withParams(postgresUrl(), { namespace, schema });

  beforeAll(async () => {
    await withPostgres(postgresUrl(), async (client) => {
      await client.query(`DROP ROLE IF EXISTS ${PASSWORD_ROLE}`).catch(() => undefined);
      await client.query(`CREATE ROLE ${PASSWORD_ROLE} LOGIN PASSWORD '${PASSWORD}'`).catch(() => undefined);
      await client.query(`GRANT CREATE ON DATABASE postgres TO ${PASSWORD_ROLE}`);
    });
  });

  afterAll(async () => {
    await withPostgres(postgresUrl(), async (client) => {
      for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    });
    for (const text of texts) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(WRONG);
    }
  });

  it('takes the namespace and schema parameters out of the URL before node-postgres sees it, and keeps the rest', () => {
    const parsed = parsePostgresUrl(
      `postgresql://alice:${PASSWORD}@db.example:6432/app?namespace=pay/eu&schema=locks&sslmode=require&application_name=x`,
    );
    expect(parsed).toMatchObject({ namespace: 'pay/eu', schema: 'locks' });
    expect(parsed.connectionString).not.toMatch(/namespace|schema=/);
    expect(parsed.connectionString).toContain('sslmode=require');
    expect(parsed.connectionString).toContain(PASSWORD); // node-postgres needs it...
    expect(parsed.shown).not.toContain(PASSWORD); // ...nobody else sees it
    expect(parsePostgresUrl('postgres://db/app')).toMatchObject({ namespace: 'baton', schema: 'baton' });
    for (const bad of [
      `postgres://u:${PASSWORD}@db/app?schema=Drop;`,
      `postgres://u:${PASSWORD}@db/app?namespace=a//b`,
      `postgres://u:${PASSWORD}@db/app?namespace=a&namespace=b`,
      `postgres://u:${PASSWORD}@db:99999/app`,
    ]) {
      const error = (() => {
        try {
          parsePostgresUrl(bad);
          return undefined;
        } catch (e) {
          return e as Error;
        }
      })();
      expect(error, bad).toBeInstanceOf(InvalidArgumentError);
      texts.push(String(error), error?.stack ?? '');
    }
  });

  it('logs in with a password from the URL; the password is in no error, inspect output or util.inspect of the session', async () => {
    const schema = freshSchema();
    schemas.push(schema);
    const url = new URL(schemaUrl(schema));
    url.username = PASSWORD_ROLE;
    url.password = PASSWORD;
    const session = await connect(url.toString(), { sessionTimeoutMs: 2_000 });
    try {
      const held = await new FairMutex(session, 'secret').acquire();
      texts.push(inspect(session, { depth: 20, showHidden: true }), inspect(held, { depth: 20, showHidden: true }));
      let out = '';
      await runInspect({
        url: url.toString(),
        name: 'secret',
        json: false,
        watch: false,
        connectTimeoutMs: 5_000,
        write: (text) => (out += text),
      });
      expect(out).toContain('holder');
      texts.push(out);
      await held.release();
    } finally {
      await session.close();
    }
    if (process.env['BATON_TEST_POSTGRES'] === undefined) {
      url.password = WRONG;
      const refused = await connect(url.toString(), { connectTimeoutMs: 5_000 }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(refused).toBeInstanceOf(AccessDeniedError);
      texts.push(String(refused), refused?.stack ?? '', inspect(refused, { depth: 20, showHidden: true }));
    }
  });

  it('creates the schema once when many sessions connect at once, and refuses to connect without it when createSchema is false', async () => {
    const schema = freshSchema();
    schemas.push(schema);
    const refused = await connect(schemaUrl(schema), { createSchema: false }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused).toBeInstanceOf(BackendError);
    expect(refused?.message).toContain('baton schema');
    const sessions = await Promise.all(
      Array.from({ length: 8 }, () => connect(schemaUrl(schema), { sessionTimeoutMs: 2_000 })),
    );
    await Promise.all(sessions.map((session) => session.close()));
    const later = await connect(schemaUrl(schema), { createSchema: false });
    await later.close();
    const versions = await withPostgres(
      postgresUrl(),
      async (client) => (await client.query(`SELECT version FROM ${schema}.version`)).rows,
    );
    expect(versions).toEqual([{ version: 1 }]);
  });

  it('baton schema <url> --print prints the SQL; baton schema <url> applies it, after which createSchema: false connects', async () => {
    const schema = freshSchema();
    schemas.push(schema);
    const printed = await runBaton(['schema', schemaUrl(schema), '--print']);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(/^BEGIN;/);
    expect(printed.stdout).toContain(`CREATE TABLE ${schema}.entries`);
    expect(printed.stdout).toContain(`CREATE FUNCTION ${schema}.list_before(`); // the whole schema, what was added since too
    expect(printed.stdout).toMatch(/COMMIT;\n$/);
    await expect(connect(schemaUrl(schema), { createSchema: false })).rejects.toBeInstanceOf(BackendError); // printing applied nothing
    const applied = await runBaton(['schema', schemaUrl(schema)]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('created');
    expect((await runBaton(['schema', schemaUrl(schema)])).stdout).toContain('there already');
    await (await connect(schemaUrl(schema), { createSchema: false })).close();
    const wrongScheme = await runBaton(['schema', 'etcd://127.0.0.1:2379/x']);
    expect(wrongScheme.code).toBe(2);
  });

  it('refuses a schema of another version, saying which', async () => {
    const schema = freshSchema();
    schemas.push(schema);
    await (await connect(schemaUrl(schema))).close();
    await withPostgres(postgresUrl(), (client) => client.query(`UPDATE ${schema}.version SET version = 99`));
    const refused = await connect(schemaUrl(schema)).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused).toBeInstanceOf(BackendError);
    expect(refused?.message).toMatch(/version 99.*needs version 1/);
  });

  it('takes what the URL leaves out from the PG* environment variables, as node-postgres does', async () => {
    const server = new URL(postgresUrl());
    const saved = { PGHOST: process.env['PGHOST'], PGPORT: process.env['PGPORT'], PGUSER: process.env['PGUSER'] };
    Object.assign(process.env, {
      PGHOST: server.hostname,
      PGPORT: server.port,
      PGUSER: decodeURIComponent(server.username),
    });
    try {
      const session = await connect(
        `postgres:///${server.pathname.slice(1)}?namespace=env-${randomUUID().slice(0, 8)}`,
        { sessionTimeoutMs: 2_000 },
      );
      const held = await new FairMutex(session, 'env').acquire();
      expect(held.fencingToken).toBeGreaterThan(0n);
      await held.release();
      await session.close();
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('passes TLS parameters through to node-postgres: sslmode=require on a server without TLS fails to connect', async () => {
    const error = await connect(withParams(postgresUrl(), { sslmode: 'require', namespace: 'tls' }), {
      connectTimeoutMs: 1_000,
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(BackendError);
    expect(String((error?.cause as Error | undefined)?.message)).toMatch(/SSL/i);
  });

  it('refuses createSchema on other URLs', async () => {
    await expect(connect('memory://x', { createSchema: false })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});

describe("postgres:// over TLS, as node-postgres reads the URL's parameters", () => {
  let server: PgServer | undefined;
  let certificates: TestCertificates | undefined;
  beforeAll(async () => {
    certificates = makeCertificates();
    server = await startPostgres({ tls: { certFile: certificates.certFile, keyFile: certificates.keyFile } });
  });
  afterAll(async () => {
    await server?.stop();
    certificates?.remove();
  });

  it('sslmode=verify-full with the CA in sslrootcert: both connections of the session use TLS; another CA is refused', async () => {
    const url = withParams(server!.url, {
      namespace: 'tls',
      sslmode: 'verify-full',
      sslrootcert: certificates!.caFile,
    });
    const session = await connect(url, { sessionTimeoutMs: 2_000 });
    try {
      const held = await new FairMutex(session, 'tls').acquire();
      const pids = Object.values(await postgresProbeOf(session).view.backendPids());
      const ssl = await withPostgres(
        server!.url,
        async (client) =>
          (await client.query('SELECT pid, ssl FROM pg_stat_ssl WHERE pid = ANY($1::int[])', [pids])).rows,
      );
      expect(ssl).toHaveLength(2);
      expect(ssl.every((row: { ssl: boolean }) => row.ssl)).toBe(true);
      await held.release();
    } finally {
      await session.close();
    }
    const untrusted = withParams(server!.url, {
      namespace: 'tls',
      sslmode: 'verify-full',
      sslrootcert: certificates!.otherCaFile,
    });
    const refused = await connect(untrusted, { connectTimeoutMs: 1_000 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused).toBeInstanceOf(BackendError);
    expect(refused?.message).toMatch(/certificate/i);
  });
});

describe('postgres:// without node-postgres installed', () => {
  it('fails to connect with MISSING_DEPENDENCY saying to install pg', () => {
    // A separate Node in which pg cannot be resolved, as in a project that never installed it.
    const script =
      "import('./src/connect.ts').then((m) => m.connect('postgres://127.0.0.1:1/x')).then(() => console.log('connected'), (e) => console.log(JSON.stringify({ code: e.code, message: e.message, cause: e.cause?.code })))";
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--import', './test/harness/workers/hide-pg.mjs', '--input-type=module', '-e', script],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(run.status, run.stderr).toBe(0);
    const outcome = JSON.parse(run.stdout) as { code: string; message: string; cause: string };
    expect(outcome.message).toContain('npm install pg');
    expect(outcome).toMatchObject({ code: 'MISSING_DEPENDENCY', cause: 'ERR_MODULE_NOT_FOUND' });
  });
});
