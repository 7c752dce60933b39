import { postgresCounters, postgresWatches } from 'baton-locks/testing';
import pg from 'pg';
import { inject } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { sessionIdOf, sessionRowOf } from '../../../src/backends/postgres/driver.js';
import type { Fixture } from './fixture.js';

/** The lease of the contract suites' sessions: expiry tests then take seconds. */
export const POSTGRES_SESSION_MS = 2_000;

/** A short-lived client on the server (the harness's superuser), for the checks and faults the tests need. */
export async function withPostgres<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The server's URL without any query (baton's parameters are added per test). */
export function postgresUrl(): string {
  return inject('postgres');
}

/** `url` with baton's `namespace` (and any other parameters) added. */
export function withParams(url: string, params: Record<string, string>): string {
  const parsed = new URL(url);
  for (const [name, value] of Object.entries(params)) parsed.searchParams.set(name, value);
  return parsed.toString();
}

/** Rows of a table that may not exist yet (no session has created the schema): none. */
async function rowsOf<T extends Record<string, unknown>>(
  client: pg.Client,
  text: string,
  values: unknown[],
): Promise<T[]> {
  try {
    return (await client.query<T>(text, values)).rows;
  } catch (error) {
    if ((error as { code?: string }).code === '42P01' || (error as { code?: string }).code === '3F000') return [];
    throw error;
  }
}

export function postgresFixture(): Fixture {
  return postgresFixtureOf(postgresUrl(), 'postgres');
}

/** The same fixture for any server, e.g. one a fault test started for itself; `schema` default baton. */
export function postgresFixtureOf(
  url: string,
  name: string,
  schema = 'baton',
  sessionTimeoutMs = POSTGRES_SESSION_MS,
): Fixture {
  const s = schema;
  return {
    name,
    url: (namespace) => withParams(url, { namespace, ...(schema === 'baton' ? {} : { schema }) }),
    options: { sessionTimeoutMs },
    // Live entries: those of an expired session are no one's any more (the next look at their queue removes them).
    // Guarded values too (they outlive their writer, so one left behind is a leak), as `<queue>#<name>`.
    entries: (namespace) =>
      withPostgres(url, async (client) =>
        (
          await rowsOf<{ key: string }>(
            client,
            `(SELECT e.key FROM ${s}.entries e JOIN ${s}.sessions o ON o.id = e.session AND o.expires_at > clock_timestamp() WHERE e.namespace = $1 ORDER BY e.token)` +
              ` UNION ALL (SELECT v.queue || '#' || v.name FROM ${s}.guarded_values v WHERE v.namespace = $1 ORDER BY 1)`,
            [namespace],
          )
        ).map((row) => row.key),
      ),
    // Entry waits are kept as `<namespace>/<queue>#<key>`, queue waits as `<namespace>/<queue>`.
    watched: async (namespace) =>
      [...postgresWatches.keys()]
        .filter((tag) => tag.startsWith(`${namespace}/`))
        .map((tag) => (tag.includes('#') ? tag.slice(tag.indexOf('#') + 1) : tag))
        .sort(),
    notifications: () => postgresCounters.notifications,
    expire: (session) => expirePostgresSession(url, session, schema),
    removeEntry: (key) =>
      withPostgres(url, async (client) => void (await client.query(`DELETE FROM ${s}.entries WHERE key = $1`, [key]))),
    cleanup: (namespace) =>
      withPostgres(url, async (client) => {
        await rowsOf(client, `DELETE FROM ${s}.entries WHERE namespace = $1`, [namespace]);
        await rowsOf(client, `DELETE FROM ${s}.guarded_values WHERE namespace = $1`, [namespace]);
      }),
    liveSessions: (ids) =>
      withPostgres(url, async (client) => {
        const rows = await rowsOf<{ id: string }>(
          client,
          `SELECT id::text AS id FROM ${s}.sessions WHERE id = ANY($1::bigint[]) AND expires_at > clock_timestamp()`,
          [ids.map(sessionRowOf).filter((id) => /^\d+$/.test(id))],
        );
        return rows.map((row) => sessionIdOf(row.id));
      }),
    crossProcess: true,
    // The heartbeat (every quarter of the lease) finds a removed session; a lost connection by the deadline.
    lossDeadlineMs: sessionTimeoutMs * 3,
  };
}

/** Ends a session from the server side, as an operator deleting its row would: its entries go with it. */
export async function expirePostgresSession(url: string, session: Session, schema = 'baton'): Promise<void> {
  await withPostgres(
    url,
    async (client) =>
      void (await client.query(`DELETE FROM ${schema}.sessions WHERE id = $1`, [sessionRowOf(session.id)])),
  );
}
