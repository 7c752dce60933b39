import { InvalidArgumentError } from '../../../recipes/errors.js';
import { checkNamespace, DEFAULT_NAMESPACE, hidePassword } from '../url-forms.js';
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

/** What an error may show of a URL that did not parse: its scheme only, if the URL may hold a password. */
function shownUnparsed(url: string): string {
  if (!/@|password/i.test(url)) return url;
  return `${/^([a-z][a-z0-9+.-]*:)/i.exec(url)?.[1] ?? ''}//…`;
}

/**
 * A parsed URL as it may be shown: its password replaced. An `@` outside the user and password (a
 * password with a `/` in it makes the parser take `user:pass` for a host and port) masks as the raw text
 * would, up to the last `@`.
 */
function shownParsed(raw: string, parsed: URL): string {
  if (parsed.username === '' && parsed.password === '' && raw.includes('@')) return hidePassword(raw);
  const copy = new URL(parsed.toString());
  if (copy.password !== '') copy.password = '***';
  return copy.toString().replace(/([?&]password=)[^&#]*/gi, '$1***');
}

/**
 * Parses a PostgreSQL URL. Credentials are allowed (node-postgres reads them from it); the password
 * never appears in an error. Whatever the URL leaves out comes from the PG* environment variables as
 * node-postgres reads them (PGHOST, PGUSER, PGPASSWORD, PGSSLMODE...).
 */
export function parsePostgresUrl(url: string): PostgresUrl {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArgumentError('url', shownUnparsed(url), EXPECTED);
  }
  const shown = shownParsed(url, parsed);
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')
    throw new InvalidArgumentError('url', shown, EXPECTED);
  if (parsed.hash !== '') throw new InvalidArgumentError('url', shown, `no #fragment: ${EXPECTED}`);
  const params = parsed.searchParams;
  for (const name of OWN)
    if (params.getAll(name).length > 1) throw new InvalidArgumentError(`url parameter ${name}`, shown, 'given once');
  const namespace = parseNamespace(params.get('namespace'));
  const schema = params.get('schema') ?? 'baton';
  if (!SCHEMA_NAME.test(schema))
    throw new InvalidArgumentError(
      'url parameter schema',
      schema,
      'a lowercase SQL name of [a-z0-9_], starting with a letter or _, at most 40 characters',
    );
  for (const name of OWN) params.delete(name);
  return { connectionString: parsed.toString(), namespace, schema, shown: shownParsed(url, parsed) };
}

function parseNamespace(value: string | null): string {
  return value === null || value === '' ? DEFAULT_NAMESPACE : checkNamespace(value, 'url parameter namespace');
}
