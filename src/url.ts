import { InvalidArgumentError } from '../recipes/errors.js';
import { validateName } from '../recipes/validate.js';
import { parsePostgresUrl, type PostgresUrl } from './backends/postgres/url.js';

export type Scheme = 'zk' | 'etcd' | 'memory' | 'postgres' | 'redis';

export interface ParsedUrl {
  readonly scheme: Scheme;
  /** `host:port` each; for memory, the store's name. */
  readonly hosts: readonly string[];
  /** Path segments under which every queue lives, without leading or trailing `/`. */
  readonly namespace: string;
  /** postgres: the URL taken apart (connection string for node-postgres, schema, the URL as shown). */
  readonly postgres?: PostgresUrl;
  /** redis: the database number (`/DB`), the user and password, TLS (`rediss:`). */
  readonly redis?: RedisTarget;
}

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

const FORM = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(\/[^?#]*)?$/i;
const SCHEMES: Record<string, Scheme> = { zk: 'zk', zookeeper: 'zk', etcd: 'etcd', memory: 'memory' };
const DEFAULT_NAMESPACE = 'baton';
const EXPECTED =
  'zk://host:port[,host:port...][/namespace], etcd://host:port[,...][/namespace], postgres://[user[:password]@]host[:port]/database[?namespace=NS], redis://[user:password@]host:port[,host:port...][/db][?namespace=ns] or memory://name[/namespace]';
const POSTGRES = /^postgres(?:ql)?:\/\//i;
const REDIS_SCHEME = /^(rediss?):\/\//i;
/** What follows the credentials (or `://` without them): `host:port[,host:port...][/db][?query]`. */
const REDIS_REST = /^([^@/?#]+)(?:\/([^?#]*))?(?:\?([^#]*))?$/;

/**
 * Parses a connection URL. Credentials in the URL are refused (they would end up in logs), except in
 * postgres and redis URLs, where they are usual: their password is never shown.
 */
export function parseUrl(url: unknown): ParsedUrl {
  if (typeof url !== 'string') throw new InvalidArgumentError('url', url, EXPECTED);
  if (POSTGRES.test(url.trim())) {
    const postgres = parsePostgresUrl(url.trim());
    return { scheme: 'postgres', hosts: [], namespace: postgres.namespace, postgres };
  }
  if (/^rediss?:/i.test(url.trim())) return parseRedisUrl(url.trim());
  const match = FORM.exec(url.trim());
  if (match === null) throw new InvalidArgumentError('url', redactUrl(url), EXPECTED);
  const [, rawScheme = '', authority = '', path = ''] = match;
  const scheme = SCHEMES[rawScheme.toLowerCase()];
  if (scheme === undefined)
    throw new InvalidArgumentError('url scheme', `${rawScheme}:`, 'zk:, etcd:, postgres:, redis:, rediss: or memory:');
  if (authority.includes('@')) {
    throw new InvalidArgumentError(
      'url',
      `${rawScheme}://…@…`,
      'no credentials in the URL; pass them as connect() options',
    );
  }
  const hosts = authority.split(',').map((host) => host.trim());
  if (scheme === 'memory') {
    if (hosts.length !== 1 || !/^[A-Za-z0-9._-]+$/.test(hosts[0] ?? '')) {
      throw new InvalidArgumentError('memory store name', authority, 'one name of [A-Za-z0-9._-], as in memory://test');
    }
  } else {
    for (const host of hosts) validateHost(host, url);
    // node-zookeeper-client splits host and port at the first colon: an IPv6 address would crash the process.
    if (scheme === 'zk' && hosts.some((host) => host.startsWith('['))) {
      throw new InvalidArgumentError(
        'url',
        url,
        'host names or IPv4 addresses: the ZooKeeper client cannot dial an IPv6 address (use a name that resolves to it)',
      );
    }
  }
  const namespace = parseNamespace(path);
  if (scheme === 'zk' && namespace.split('/')[0] === 'zookeeper') {
    throw new InvalidArgumentError(
      'url namespace',
      path,
      'a namespace outside /zookeeper, which is reserved by ZooKeeper for its own use',
    );
  }
  return { scheme, hosts, namespace };
}

function validateHost(host: string, url: string, what = `host ${JSON.stringify(host)} in url`): void {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(host);
  const port = Number(match?.[2]);
  if (match === null || port < 1 || port > 65_535) {
    throw new InvalidArgumentError(what, url, 'host:port with a port from 1 to 65535');
  }
}

function parseNamespace(path: string): string {
  const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') return DEFAULT_NAMESPACE;
  try {
    return validateName(trimmed);
  } catch (error) {
    throw new InvalidArgumentError(
      'url namespace',
      path,
      `path segments of [A-Za-z0-9._-] (${(error as Error).message})`,
    );
  }
}

/**
 * A URL as it may be shown: if it holds an `@`, everything from `://` (or the scheme's colon) to its
 * LAST `@` is replaced, as the userinfo ends at the last `@` (a password may hold `@`, `/`, `?` or `#`
 * unencoded, and no namespace or database holds an `@`).
 */
export function redactUrl(url: string): string {
  const at = url.lastIndexOf('@');
  if (at < 0) return url;
  const scheme = /^[a-z][a-z0-9+.-]*:(?:\/\/)?/i.exec(url)?.[0].length ?? 0;
  return `${url.slice(0, scheme)}(not shown)${url.slice(at)}`;
}

/**
 * `redis://[user:password@]host:port[,host:port...][/db][?namespace=ns]` and `rediss://` (TLS); several
 * hosts are the seed nodes of a Redis Cluster. The user and password are percent-decoded; neither the
 * password nor the URL holding it is ever echoed in an error.
 */
function parseRedisUrl(url: string): ParsedUrl {
  const shown = redactUrl(url);
  const scheme = REDIS_SCHEME.exec(url);
  if (scheme === null) throw new InvalidArgumentError('url', shown, EXPECTED);
  const rawScheme = scheme[1]!;
  // The credentials end at the last '@' of the URL: a password may hold '@', '/', '?' or '#'.
  const at = url.lastIndexOf('@');
  const userinfo = at < 0 ? undefined : url.slice(scheme[0].length, at);
  const match = REDIS_REST.exec(url.slice(at < 0 ? scheme[0].length : at + 1));
  if (match === null) throw new InvalidArgumentError('url', shown, EXPECTED);
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
    redis: new RedisTarget(db, rawScheme.toLowerCase() === 'rediss', username, password),
  };
}
