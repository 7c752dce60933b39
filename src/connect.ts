import type { ConnectionOptions } from 'node:tls';

import type { IOptions } from 'etcd3';

import type { Session } from '../recipes/contract.js';
import { InvalidArgumentError } from '../recipes/errors.js';
import { checkOptionKeys, MAX_TIMEOUT_MS, validateSignal } from '../recipes/validate.js';
import { refuseUnknownNames } from './backends/dial.js';
import { MemoryDriver } from './backends/memory/driver.js';
import { memoryStore } from './backends/memory/store.js';
import type { Probes } from './backends/probe.js';
import type { AclPolicy } from './backends/zookeeper/acl.js';
import { backoff } from './backoff.js';
import type { Driver } from './driver-port.js';
import { BatonSession, internalsOf } from './session.js';
import { parseUrl, RedisTarget } from './url.js';

/** etcd client settings passed through to etcd3 (the `etcd` option of `connect`). */
export type EtcdClientOptions = Pick<IOptions, 'auth' | 'credentials' | 'grpcOptions'>;

/**
 * Options of `connect()`. Every key is optional; an unknown key is refused with `InvalidArgumentError`
 * naming the nearest valid one.
 */
export interface ConnectOptions {
  /**
   * How long the server keeps the session after it last heard from the client, in ms: ZooKeeper's
   * session timeout (the server clamps it to 2-20 x tickTime), etcd's lease TTL rounded up to whole
   * seconds (unless `ttlSeconds` is given). `session.timeoutMs` is what the server granted. Default 10 000.
   */
  readonly sessionTimeoutMs?: number;
  /**
   * How long to wait for the first connection before `connect()` rejects with `BackendError`, in ms.
   * Default 15 000.
   */
  readonly connectTimeoutMs?: number;
  /**
   * Gives up connecting when it aborts: `connect()` rejects with its reason, and the client opened for
   * it is closed. Only the connect: the session, once open, does not listen to it.
   */
  readonly signal?: AbortSignal;
  /**
   * How long before the server could expire the session the client declares it lost on its own when
   * the server stops answering. Default: an eighth of the negotiated session timeout.
   */
  readonly deadlineMarginMs?: number;
  /**
   * While the connection is down but the session may still live: 'wait' (default) lets holders keep
   * their locks until the deadline; 'abort' aborts their signals at once (the strictest choice) and
   * gives their entries back as soon as the server is reachable again.
   */
  readonly onSuspend?: 'wait' | 'abort';
  /**
   * A waiter whose queue entry vanished while its session lives (deleted by another client or an
   * operator): 'requeue' (default) queues it again at the tail, within the same deadline; 'fail'
   * rejects its acquire with LockLostError.
   */
  readonly onWaiterLost?: 'requeue' | 'fail';
  /**
   * After the session is lost, open a new one (retrying until it succeeds or the old one is closed) and
   * announce it with `session.on('replaced', next => ...)`. Holds never move: take locks again on `next`.
   */
  readonly reconnectAfterLoss?: boolean;
  /** ZooKeeper: credentials sent before any request, e.g. `{ scheme: 'digest', credentials: 'user:password' }`. */
  readonly auth?: ZkAuth | readonly ZkAuth[];
  /**
   * ZooKeeper: the ACL of every znode baton creates (entries and their parent directories). With
   * `auth`, default `'creator-all-world-read'` (the creator may do everything, everyone may read, so
   * that `baton inspect` works); `'creator-only'` hides the queues too. Without `auth` only `'open'`
   * is possible (ZooKeeper knows a creator only by its credentials), and is the default.
   */
  readonly acl?: AclPolicy;
  /**
   * etcd: the lease TTL asked of the server, in whole seconds (etcd grants at least its minimum, about
   * 1.5 election timeouts: 2 s with etcd's defaults). Default: `sessionTimeoutMs` rounded up to whole
   * seconds when that is given, else 10.
   */
  readonly ttlSeconds?: number;
  /**
   * etcd: passed through to etcd3 (`auth: { username, password }`, `credentials` for TLS,
   * `grpcOptions`). Default: none (plain text, no auth).
   */
  readonly etcd?: EtcdClientOptions;
  /**
   * PostgreSQL: create baton's schema (tables and functions, see docs/postgres.md) when it is missing,
   * on the first connect, under an advisory lock (default true). false for a role that may not run
   * DDL: `connect()` then rejects while the schema is missing (`baton schema <url>` creates it).
   */
  readonly createSchema?: boolean;
  /**
   * Redis: client settings (`tls` for a `rediss://` URL). The user and password go in the URL,
   * `redis://user:password@host:6379/0`, and are never shown (errors, `baton inspect`, logs).
   */
  readonly redis?: RedisClientOptions;
}

/** Redis client settings (the `redis` option of `connect`). */
export interface RedisClientOptions {
  /**
   * TLS settings for a `rediss://` URL (`ca`, `cert`, `key`, `rejectUnauthorized`...), passed to the
   * client's TLS connection. Default: Node's defaults (the system's CAs).
   */
  readonly tls?: ConnectionOptions;
  /** The user name (Redis 6 ACLs), instead of the URL's. */
  readonly username?: string;
  /** The password, instead of the URL's (so that it appears in no URL); never shown. */
  readonly password?: string;
}

/** ZooKeeper credentials (the `auth` option of `connect`): sent before any request. */
export interface ZkAuth {
  /** `'digest'`, the only scheme baton sends. */
  readonly scheme: 'digest';
  /** `user:password`; never shown in an error message. */
  readonly credentials: string;
}

const DEFAULTS = { sessionTimeoutMs: 10_000, connectTimeoutMs: 15_000, ttlSeconds: 10 } as const;

/**
 * Opens a session on the backend the URL names: `zk://h1:2181,h2:2181/myapp`, `etcd://h1:2379/myapp`,
 * `postgres://user[:password]@host:5432/db?namespace=myapp` (also `postgresql://`; needs the optional
 * peer dependency pg), `redis://[user:password@]host:6379[/db]?namespace=myapp` (`rediss://` with TLS;
 * needs the optional peer dependency ioredis), `memory://test` (one store per name, in this process).
 * The URL's path is the namespace every lock lives under (default `baton`; on PostgreSQL and Redis the
 * `namespace` parameter). Close the session with `session.close()` when done.
 *
 * Rejects with `InvalidArgumentError` for a bad URL or option (before anything is sent), with
 * `BackendError` when no server answers within `connectTimeoutMs` (the cause says why: refused,
 * unresolvable), with `AccessDeniedError` when the server refuses the user name or password, with
 * `BatonError` code `MISSING_DEPENDENCY` when pg or ioredis is needed and not installed, and with
 * `signal.reason` when `signal` aborts.
 */
export async function connect(url: string, options: ConnectOptions = {}): Promise<Session> {
  return connectWith(url, options, undefined);
}

/**
 * @internal `connect`, with a probe handed to each driver it opens (a successor's too):
 * `baton-locks/testing` opens its sessions so. The package's `connect` hands none.
 */
export async function connectWith(url: string, options: ConnectOptions, probes: Probes | undefined): Promise<Session> {
  const session = await open(url, options, probes);
  if (validateConnectOptions(options).reconnectAfterLoss) replaceWhenLost(session, url, options, probes);
  return session;
}

/** Opens a successor once `session` is lost; gives up only if the lost session is closed meanwhile. */
function replaceWhenLost(session: Session, url: string, options: ConnectOptions, probes: Probes | undefined): void {
  const onState = (state: string): void => {
    if (state !== 'lost') return;
    session.off('state', onState);
    void (async () => {
      for (let attempt = 0; ; attempt += 1) {
        if ((session.state as string) === 'closed') return;
        try {
          // The first connect's signal was for that connect only.
          const { signal: _first, ...rest } = options;
          const next = await connectWith(url, rest, probes);
          if ((session.state as string) === 'closed') {
            await next.close();
            return;
          }
          internalsOf(session).replacedBy(next);
          return;
        } catch {
          await backoff(Math.min(attempt, 6)); // the servers may be down for a while
        }
      }
    })();
  };
  session.on('state', onState);
}

async function open(url: string, options: ConnectOptions, probes: Probes | undefined): Promise<BatonSession> {
  const parsed = parseUrl(url);
  const {
    deadlineMarginMs,
    onSuspend,
    onWaiterLost,
    reconnectAfterLoss: _reconnect,
    ...settings
  } = validateConnectOptions(options);
  if (parsed.scheme !== 'postgres' && settings.createSchema !== undefined) {
    throw new InvalidArgumentError('createSchema', settings.createSchema, 'postgres: URLs only');
  }
  if (parsed.scheme !== 'redis' && settings.redis !== undefined) {
    throw new InvalidArgumentError('redis', '(not shown)', 'redis: and rediss: URLs only');
  }
  if (parsed.scheme !== 'zk' && (settings.auth.length > 0 || settings.acl !== 'open')) {
    throw new InvalidArgumentError(
      'auth/acl',
      `${parsed.scheme}:`,
      `zk: URLs only; on etcd pass etcd: { auth: { username, password }, credentials } instead`,
    );
  }
  if (settings.redis !== undefined && parsed.scheme !== 'redis') {
    throw new InvalidArgumentError('redis', `${parsed.scheme}:`, 'redis: and rediss: URLs only');
  }
  if (settings.redis?.tls !== undefined && parsed.redis?.tls === false) {
    throw new InvalidArgumentError(
      'redis.tls',
      'redis:',
      'a rediss:// URL (TLS settings with a plain-text URL would be ignored)',
    );
  }
  const sessionOptions = {
    onSuspend,
    onWaiterLost,
    ...(deadlineMarginMs === undefined ? {} : { deadlineMarginMs }),
  };
  const opening: Opening = { sessionOptions, marginMs: deadlineMarginMs, signal: settings.signal, probes };
  settings.signal?.throwIfAborted();
  if (parsed.scheme === 'zk' || parsed.scheme === 'etcd' || parsed.scheme === 'redis') {
    // A name that does not exist fails at once; the dial gets what is left of the connect timeout.
    const deadline = performance.now() + settings.connectTimeoutMs;
    await refuseUnknownNames(
      parsed.scheme === 'zk' ? 'ZooKeeper' : parsed.scheme === 'redis' ? 'Redis' : 'etcd',
      parsed.hosts,
      { deadline, signal: settings.signal },
    );
    settings.connectTimeoutMs = Math.max(1, Math.ceil(deadline - performance.now()));
  }
  switch (parsed.scheme) {
    case 'memory':
      return new BatonSession(new MemoryDriver(memoryStore(parsed.hosts[0] ?? ''), parsed.namespace), sessionOptions);
    case 'zk': {
      const { auth, acl, etcd: _etcd, redis: _redis, ttlSeconds: _ttl, createSchema: _create, ...timeouts } = settings;
      // Each server's client is loaded only when used: etcd3 brings gRPC, which a ZooKeeper user never needs.
      const { ZkDriver } = await import('./backends/zookeeper/driver.js');
      const probe = probes?.zk();
      const driver = await ZkDriver.open(
        { hosts: parsed.hosts.join(','), namespace: `/${parsed.namespace}`, ...timeouts, auth, acl },
        probe,
      );
      return sessionOver(driver, probe, opening);
    }
    case 'postgres': {
      const { PostgresDriver } = await import('./backends/postgres/driver.js');
      const { connectionString, shown, schema } = parsed.postgres!;
      const probe = probes?.postgres();
      const driver = await PostgresDriver.open(
        {
          connectionString,
          shown,
          namespace: parsed.namespace,
          schema,
          sessionTimeoutMs: settings.sessionTimeoutMs,
          connectTimeoutMs: settings.connectTimeoutMs,
          createSchema: settings.createSchema ?? true,
          signal: settings.signal,
        },
        probe,
      );
      return sessionOver(driver, probe, opening);
    }
    case 'etcd': {
      const tls = settings.etcd?.credentials !== undefined;
      const { EtcdDriver } = await import('./backends/etcd/driver.js');
      const probe = probes?.etcd();
      const driver = await EtcdDriver.open(
        {
          hosts: parsed.hosts.map((host) => `${tls ? 'https' : 'http'}://${host}`),
          namespace: parsed.namespace,
          ttlSeconds: settings.ttlSeconds,
          connectTimeoutMs: settings.connectTimeoutMs,
          ...(settings.signal === undefined ? {} : { signal: settings.signal }),
          ...(settings.etcd === undefined ? {} : { client: settings.etcd }),
        },
        probe,
      );
      return sessionOver(driver, probe, opening);
    }
    case 'redis': {
      const { RedisDriver } = await import('./backends/redis/driver.js');
      const probe = probes?.redis();
      const driver = await RedisDriver.open(
        {
          hosts: parsed.hosts,
          target: withCredentials(parsed.redis!, settings.redis),
          namespace: parsed.namespace,
          sessionTimeoutMs: settings.sessionTimeoutMs,
          connectTimeoutMs: settings.connectTimeoutMs,
          signal: settings.signal,
          tls: settings.redis?.tls,
        },
        probe,
      );
      return sessionOver(driver, probe, opening);
    }
  }
}

/** What every backend's opened driver goes through to become a session. */
interface Opening {
  readonly sessionOptions: ConstructorParameters<typeof BatonSession>[1];
  readonly marginMs: number | undefined;
  readonly signal: AbortSignal | undefined;
  readonly probes: Probes | undefined;
}

/**
 * A driver just opened becomes a session: closed again if the connect was given up meanwhile or the
 * margin is as long as the timeout the server granted; a test probe hears of the session.
 */
async function sessionOver(
  driver: Driver,
  probe: Parameters<Probes['opened']>[1] | undefined,
  opening: Opening,
): Promise<BatonSession> {
  await closeIfAborted(driver, opening.signal);
  await refuseMargin(opening.marginMs, driver);
  const session = new BatonSession(driver, opening.sessionOptions);
  if (opening.probes !== undefined && probe !== undefined) opening.probes.opened(session, probe);
  return session;
}

/** A connect given up on just as it succeeded: the session is closed (its entries and lease go with it). */
async function closeIfAborted(driver: Driver, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted !== true) return;
  await driver.close().catch(() => undefined); // the caller hears the abort, not how the close went
  throw signal.reason;
}

/** A margin as long as the session timeout the server granted would declare the session lost at once. */
async function refuseMargin(marginMs: number | undefined, driver: Driver): Promise<void> {
  if (marginMs === undefined || marginMs < driver.timeoutMs) return;
  await driver.close();
  throw new InvalidArgumentError(
    'deadlineMarginMs',
    marginMs,
    `less than the session timeout the server granted (${driver.timeoutMs} ms)`,
  );
}

interface Settings {
  sessionTimeoutMs: number;
  connectTimeoutMs: number;
  deadlineMarginMs: number | undefined;
  onSuspend: 'wait' | 'abort';
  onWaiterLost: 'requeue' | 'fail';
  reconnectAfterLoss: boolean;
  ttlSeconds: number;
  etcd: EtcdClientOptions | undefined;
  redis: RedisClientOptions | undefined;
  auth: ZkAuth[];
  acl: AclPolicy;
  signal: AbortSignal | undefined;
  createSchema: boolean | undefined;
}

const CONNECT_OPTIONS = [
  'sessionTimeoutMs',
  'connectTimeoutMs',
  'deadlineMarginMs',
  'onSuspend',
  'onWaiterLost',
  'reconnectAfterLoss',
  'ttlSeconds',
  'etcd',
  'redis',
  'auth',
  'acl',
  'signal',
  'createSchema',
];

function validateConnectOptions(options: unknown): Settings {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError('connect options', options, 'an object');
  }
  checkOptionKeys(options, CONNECT_OPTIONS);
  const given = options as Record<string, unknown>;
  const sessionTimeoutMs = positiveMs(given['sessionTimeoutMs'], 'sessionTimeoutMs', DEFAULTS.sessionTimeoutMs);
  return {
    sessionTimeoutMs,
    connectTimeoutMs: positiveMs(given['connectTimeoutMs'], 'connectTimeoutMs', DEFAULTS.connectTimeoutMs),
    deadlineMarginMs:
      given['deadlineMarginMs'] === undefined
        ? undefined
        : positiveMs(given['deadlineMarginMs'], 'deadlineMarginMs', 0),
    onSuspend: oneOf(given['onSuspend'], 'onSuspend', ['wait', 'abort']),
    onWaiterLost: oneOf(given['onWaiterLost'], 'onWaiterLost', ['requeue', 'fail']),
    reconnectAfterLoss: flag(given['reconnectAfterLoss'], 'reconnectAfterLoss'),
    // One session timeout for every backend: etcd's lease TTL follows it unless given itself.
    ttlSeconds:
      given['ttlSeconds'] === undefined && given['sessionTimeoutMs'] !== undefined
        ? ttlFor(sessionTimeoutMs)
        : ttl(given['ttlSeconds']),
    etcd: etcdClientOptions(given['etcd']),
    redis: redisClientOptions(given['redis']),
    ...zkAccess(given['auth'], given['acl']),
    signal: validateSignal(given['signal']),
    createSchema: given['createSchema'] === undefined ? undefined : flag(given['createSchema'], 'createSchema'),
  };
}

/** Credentials are never echoed back in an error: only where they are and what is expected. */
function zkAccess(auth: unknown, acl: unknown): { auth: ZkAuth[]; acl: AclPolicy } {
  const list = auth === undefined ? [] : Array.isArray(auth) ? (auth as unknown[]) : [auth];
  for (const [index, item] of list.entries()) {
    const where = Array.isArray(auth) ? `auth[${index}]` : 'auth';
    // Whatever was passed may be a secret (a string instead of an object): it is described, never shown.
    if (typeof item !== 'object' || item === null)
      throw new InvalidArgumentError(
        where,
        `(not shown, a ${typeof item})`,
        "an object such as { scheme: 'digest', credentials: 'user:password' }",
      );
    const { scheme, credentials } = item as Record<string, unknown>;
    if (scheme !== 'digest')
      throw new InvalidArgumentError(
        `${where}.scheme`,
        typeof scheme === 'string' && scheme.length <= 16 ? scheme : '(not shown)',
        '"digest"',
      );
    if (typeof credentials !== 'string' || !/^[^:]+:.+$/s.test(credentials)) {
      throw new InvalidArgumentError(
        `${where}.credentials`,
        '(not shown)',
        'a "user:password" string with a non-empty user and password',
      );
    }
  }
  if (list.length === 0 && (acl === 'creator-all-world-read' || acl === 'creator-only')) {
    throw new InvalidArgumentError(
      'acl',
      acl,
      '"open" unless auth credentials are given: ZooKeeper knows a creator only by its credentials',
    );
  }
  const policy = oneOf(acl, 'acl', list.length > 0 ? ['creator-all-world-read', 'creator-only', 'open'] : ['open']);
  return { auth: list as ZkAuth[], acl: policy };
}

function flag(value: unknown, what: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(what, value, 'true or false');
  return value;
}

/** One of the allowed words; the first is the default. */
function oneOf<T extends string>(value: unknown, what: string, allowed: readonly [T, ...T[]]): T {
  if (value === undefined) return allowed[0];
  if (!allowed.includes(value as T))
    throw new InvalidArgumentError(what, value, allowed.map((word) => `"${word}"`).join(' or '));
  return value as T;
}

/** The lease TTL for a session timeout: whole seconds, rounded up (etcd raises it to its own minimum). */
function ttlFor(sessionTimeoutMs: number): number {
  return Math.min(86_400, Math.max(1, Math.ceil(sessionTimeoutMs / 1_000)));
}

function ttl(value: unknown): number {
  if (value === undefined) return DEFAULTS.ttlSeconds;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 86_400) {
    throw new InvalidArgumentError('ttlSeconds', value, 'a whole number of seconds from 1 to 86400');
  }
  return value;
}

function etcdClientOptions(value: unknown): EtcdClientOptions | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError('etcd options', value, 'an object with auth, credentials or grpcOptions');
  }
  const { auth, credentials, grpcOptions } = value as Record<string, unknown>;
  return {
    ...(auth === undefined ? {} : { auth }),
    ...(credentials === undefined ? {} : { credentials }),
    ...(grpcOptions === undefined ? {} : { grpcOptions }),
  } as EtcdClientOptions;
}

function redisClientOptions(value: unknown): RedisClientOptions | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidArgumentError('redis options', value, 'an object with tls');
  checkOptionKeys(value, ['tls', 'username', 'password']);
  const { tls, username, password } = value as Record<string, unknown>;
  if (tls !== undefined && (typeof tls !== 'object' || tls === null))
    throw new InvalidArgumentError('redis.tls', '(not shown)', 'an object of TLS settings');
  if (username !== undefined && (typeof username !== 'string' || username === ''))
    throw new InvalidArgumentError('redis.username', '(not shown)', 'a non-empty string');
  if (password !== undefined && typeof password !== 'string')
    throw new InvalidArgumentError('redis.password', '(not shown)', 'a string');
  return {
    ...(tls === undefined ? {} : { tls: tls }),
    ...(username === undefined ? {} : { username: username }),
    ...(password === undefined ? {} : { password: password }),
  };
}

/** The URL's target with the credentials of the `redis` option, where given. */
function withCredentials(target: RedisTarget, options: RedisClientOptions | undefined): RedisTarget {
  if (options?.username === undefined && options?.password === undefined) return target;
  return new RedisTarget(
    target.db,
    target.tls,
    options.username ?? target.username,
    options.password ?? target.password(),
  );
}

function positiveMs(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMEOUT_MS) {
    throw new InvalidArgumentError(what, value, `a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  }
  return value;
}
