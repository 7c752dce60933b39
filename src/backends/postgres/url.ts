import { InvalidArgumentError } from '../../../recipes/errors.js';
import { validateName } from '../../../recipes/validate.js';
import { SCHEMA_NAME } from './schema.js';

/** A `postgres://` or `postgresql://` URL taken apart: what goes to node-postgres, and what is baton's. */
export interface PostgresUrl {
  /** The URL without baton's own query parameters, for node-postgres (it may hold a password: never show it). */
  readonly connectionString: string;
  /** The namespace every queue lives under (`namespace` parameter, default `baton`). */
  readonly namespace: string;
  /** The schema of baton's tables (`schema` parameter, default `baton`). */
  readonly schema: string;
  /** The URL as it may be shown: the password, if any, replaced by `***`. */
  readonly shown: string;
}

const EXPECTED = 'postgres://[user[:password]@][host][:port][/database][?namespace=NS&schema=SCHEMA&sslmode=...]';
/** baton's query parameters, removed before node-postgres sees the URL. */
const OWN = ['namespace', 'schema'];

/** The URL with any password replaced, for messages (also for a URL too broken to parse). */
export function hidePassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*):[^/?#@]*@/i, '$1:***@').replace(/([?&]password=)[^&#]*/gi, '$1***');
}

/**
 * Parses a PostgreSQL URL. Credentials are allowed (node-postgres reads them from it); the password
 * never appears in an error. Whatever the URL leaves out comes from the PG* environment variables as
 * node-postgres reads them (PGHOST, PGUSER, PGPASSWORD, PGSSLMODE...).
 */
export function parsePostgresUrl(url: string): PostgresUrl {
  const shown = hidePassword(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArgumentError('url', shown, EXPECTED);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') throw new InvalidArgumentError('url', shown, EXPECTED);
  if (parsed.hash !== '') throw new InvalidArgumentError('url', shown, `no #fragment: ${EXPECTED}`);
  const params = parsed.searchParams;
  for (const name of OWN) if (params.getAll(name).length > 1) throw new InvalidArgumentError(`url parameter ${name}`, shown, 'given once');
  const namespace = parseNamespace(params.get('namespace'));
  const schema = params.get('schema') ?? 'baton';
  if (!SCHEMA_NAME.test(schema)) throw new InvalidArgumentError('url parameter schema', schema, 'a lowercase SQL name of [a-z0-9_], starting with a letter or _, at most 40 characters');
  for (const name of OWN) params.delete(name);
  return { connectionString: parsed.toString(), namespace, schema, shown: hidePassword(parsed.toString()) };
}

function parseNamespace(value: string | null): string {
  if (value === null || value === '') return 'baton';
  try {
    return validateName(value);
  } catch (error) {
    throw new InvalidArgumentError('url parameter namespace', value, `path segments of [A-Za-z0-9._-] (${(error as Error).message})`);
  }
}
