import { InvalidArgumentError } from '../../../recipes/errors.js';
import { validateName } from '../../../recipes/validate.js';
import { hidePassword } from '../url-forms.js';
import { DEFAULT_NAMESPACE } from '../url-forms.js';

/** A `mysql://` (or `mariadb://`) URL taken apart. */
export interface MysqlUrl {
  readonly host: string;
  readonly port: number;
  /** Empty when the URL names none (then the `mysql` option's `user` must). */
  readonly user: string;
  /** Never shown; empty when the URL holds none. */
  readonly password: string;
  readonly database: string;
  readonly namespace: string;
  /** The URL as it may be shown: the password, if any, replaced by `***`. */
  readonly shown: string;
}

export const MYSQL_URL_FORM = 'mysql://[user[:password]@]host[:port]/database[?namespace=NS]';

/** A database name baton accepts: an unquoted identifier of at most 64 characters. */
const DATABASE = /^[A-Za-z0-9_$]{1,64}$/;

/**
 * Parses a MySQL URL. The password may be in it (percent-encoded) or in the `mysql` option; it never
 * appears in an error. The database is required: baton's tables live in it.
 */
export function parseMysqlUrl(url: string): MysqlUrl {
  const shown = hidePassword(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArgumentError('url', shown, MYSQL_URL_FORM);
  }
  if (parsed.protocol !== 'mysql:' && parsed.protocol !== 'mariadb:')
    throw new InvalidArgumentError('url', shown, MYSQL_URL_FORM);
  if (parsed.hash !== '' || parsed.hostname === '') throw new InvalidArgumentError('url', shown, MYSQL_URL_FORM);
  // mysql2 reads port 0 as "none given" and dials 3306: another server than the URL names.
  if (parsed.port === '0') throw new InvalidArgumentError('url port', 0, 'a port from 1 to 65535');
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (!DATABASE.test(database))
    throw new InvalidArgumentError('url database', database, 'a database name of [A-Za-z0-9_$], 1 to 64 characters');
  const params = [...parsed.searchParams.keys()];
  const unknown = params.find((name) => name !== 'namespace');
  if (unknown !== undefined) throw new InvalidArgumentError(`url parameter ${unknown}`, unknown, 'only namespace');
  if (parsed.searchParams.getAll('namespace').length > 1)
    throw new InvalidArgumentError('url parameter namespace', shown, 'given once');
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port === '' ? 3306 : Number(parsed.port),
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    database,
    namespace: parseNamespace(parsed.searchParams.get('namespace')),
    shown,
  };
}

function parseNamespace(value: string | null): string {
  if (value === null || value === '') return DEFAULT_NAMESPACE;
  try {
    return validateName(value);
  } catch (error) {
    throw new InvalidArgumentError(
      'url parameter namespace',
      value,
      `path segments of [A-Za-z0-9._-] (${(error as Error).message})`,
    );
  }
}
