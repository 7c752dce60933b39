import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { ParsedUrl } from '../backend.js';
import { DEFAULT_NAMESPACE, parseNamespace, redactUrl, validateHost } from '../url-forms.js';

const REDIS_SCHEME = /^(rediss?):\/\//i;
/** What follows the credentials (or `://` without them): `host:port[,host:port...][/db][?query]`. */
const REDIS_REST = /^([^@/?#]+)(?:\/([^?#]*))?(?:\?([^#]*))?$/;

/**
 * Where a Redis session goes: the database, TLS, and the credentials. The password is kept in a private
 * field: it is never enumerated, printed by `util.inspect`, serialized or shown in an error.
 */
export class RedisTarget {
  readonly db: number;
  readonly tls: boolean;
  readonly username: string | undefined;
  readonly #password: string | undefined;

  constructor(db: number, tls: boolean, username: string | undefined, password: string | undefined) {
    this.db = db;
    this.tls = tls;
    this.username = username;
    this.#password = password;
  }

  /** The password, for the client's AUTH only. */
  password(): string | undefined {
    return this.#password;
  }

  toJSON(): object {
    return {
      db: this.db,
      tls: this.tls,
      username: this.username,
      password: this.#password === undefined ? undefined : '(not shown)',
    };
  }
}

/**
 * `redis://[user:password@]host:port[,host:port...][/db][?namespace=ns]` and `rediss://` (TLS); several
 * hosts are the seed nodes of a Redis Cluster. The user and password are percent-decoded; neither the
 * password nor the URL holding it is ever echoed in an error.
 */
export function parseRedisUrl(url: string, expected: string): ParsedUrl<RedisTarget> {
  const shown = redactUrl(url);
  const scheme = REDIS_SCHEME.exec(url);
  if (scheme === null) throw new InvalidArgumentError('url', shown, expected);
  const rawScheme = scheme[1]!;
  // The credentials end at the last '@' of the URL: a password may hold '@', '/', '?' or '#'.
  const at = url.lastIndexOf('@');
  const userinfo = at < 0 ? undefined : url.slice(scheme[0].length, at);
  const match = REDIS_REST.exec(url.slice(at < 0 ? scheme[0].length : at + 1));
  if (match === null) throw new InvalidArgumentError('url', shown, expected);
  const [, hostList = '', rawDb = '', query = ''] = match;
  const hosts = hostList.split(',');
  // A host is named only when the URL held no credentials.
  for (const host of hosts) {
    if (userinfo === undefined) validateHost(host, shown);
    else validateHost(host, shown, 'host in url');
  }
  const db = rawDb.replace(/\/+$/, '') === '' ? 0 : Number(rawDb.replace(/\/+$/, ''));
  if (!/^\d{1,5}$/.test(rawDb.replace(/\/+$/, '') || '0') || !Number.isInteger(db) || db > 65_535) {
    throw new InvalidArgumentError(
      'url database',
      rawDb,
      'a database number after the host, as in redis://host:6379/0',
    );
  }
  let namespace = DEFAULT_NAMESPACE;
  for (const pair of query === '' ? [] : query.split('&')) {
    const [name = '', value = ''] = pair.split('=');
    if (name !== 'namespace')
      throw new InvalidArgumentError('url query', name, 'namespace=ns, the only parameter of a redis URL');
    namespace = parseNamespace(decodeURIComponent(value));
  }
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    try {
      username = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon)) || undefined;
      password = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1));
    } catch {
      throw new InvalidArgumentError('url credentials', '(not shown)', 'user:password percent-encoded');
    }
  }
  return {
    scheme: 'redis',
    hosts,
    namespace,
    target: new RedisTarget(db, rawScheme.toLowerCase() === 'rediss', username, password),
  };
}
