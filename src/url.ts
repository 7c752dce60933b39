import { InvalidArgumentError } from '../recipes/errors.js';
import { validateName } from '../recipes/validate.js';
import { hidePassword, parsePostgresUrl, type PostgresUrl } from './backends/postgres/url.js';

export type Scheme = 'zk' | 'etcd' | 'memory' | 'postgres';

export interface ParsedUrl {
  readonly scheme: Scheme;
  /** `host:port` each; for memory, the store's name. */
  readonly hosts: readonly string[];
  /** Path segments under which every queue lives, without leading or trailing `/`. */
  readonly namespace: string;
  /** postgres: the URL taken apart (connection string for node-postgres, schema, the URL as shown). */
  readonly postgres?: PostgresUrl;
}

const FORM = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(\/[^?#]*)?$/i;
const SCHEMES: Record<string, Scheme> = { zk: 'zk', zookeeper: 'zk', etcd: 'etcd', memory: 'memory' };
const DEFAULT_NAMESPACE = 'baton';
const EXPECTED = 'zk://host:port[,host:port...][/namespace], etcd://host:port[,...][/namespace], postgres://[user[:password]@]host[:port]/database[?namespace=NS] or memory://name[/namespace]';
const POSTGRES = /^postgres(?:ql)?:\/\//i;

/**
 * Parses a connection URL. Credentials in the URL are refused (they would end up in logs), except in
 * a postgres URL, where they are usual: its password is never shown.
 */
export function parseUrl(url: unknown): ParsedUrl {
  if (typeof url !== 'string') throw new InvalidArgumentError('url', url, EXPECTED);
  if (POSTGRES.test(url.trim())) {
    const postgres = parsePostgresUrl(url.trim());
    return { scheme: 'postgres', hosts: [], namespace: postgres.namespace, postgres };
  }
  const match = FORM.exec(url.trim());
  if (match === null) throw new InvalidArgumentError('url', hidePassword(url), EXPECTED);
  const [, rawScheme = '', authority = '', path = ''] = match;
  const scheme = SCHEMES[rawScheme.toLowerCase()];
  if (scheme === undefined) throw new InvalidArgumentError('url scheme', `${rawScheme}:`, 'zk:, etcd:, postgres: or memory:');
  if (authority.includes('@')) {
    throw new InvalidArgumentError('url', `${rawScheme}://…@…`, 'no credentials in the URL; pass them as connect() options');
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
      throw new InvalidArgumentError('url', url, 'host names or IPv4 addresses: the ZooKeeper client cannot dial an IPv6 address (use a name that resolves to it)');
    }
  }
  const namespace = parseNamespace(path);
  if (scheme === 'zk' && namespace.split('/')[0] === 'zookeeper') {
    throw new InvalidArgumentError('url namespace', path, 'a namespace outside /zookeeper, which is reserved by ZooKeeper for its own use');
  }
  return { scheme, hosts, namespace };
}

function validateHost(host: string, url: string): void {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(host);
  const port = Number(match?.[2]);
  if (match === null || port < 1 || port > 65_535) {
    throw new InvalidArgumentError(`host ${JSON.stringify(host)} in url`, url, 'host:port with a port from 1 to 65535');
  }
}

function parseNamespace(path: string): string {
  const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') return DEFAULT_NAMESPACE;
  try {
    return validateName(trimmed);
  } catch (error) {
    throw new InvalidArgumentError('url namespace', path, `path segments of [A-Za-z0-9._-] (${(error as Error).message})`);
  }
}
