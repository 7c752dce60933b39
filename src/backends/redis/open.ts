import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';

import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';

import { AccessDeniedError, BackendError, BatonError, InvalidArgumentError } from '../../../recipes/errors.js';
import { loadPeer } from '../../metrics/peer.js';
import { describeDialFailure } from '../dial.js';
import { replyCode, retriable, scrubbed } from './failures.js';
import { sessionKey } from './keys.js';
import { SCRIPTS } from './scripts.js';
import type { RedisTarget } from './url.js';

/** What the Redis driver is opened with. */
export interface RedisDriverOptions {
  /** `host:port` each (an IPv6 address in brackets): a server, or seed nodes of a Redis Cluster. */
  readonly hosts: readonly string[];
  readonly target: RedisTarget;
  readonly namespace: string;
  readonly sessionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  /** TLS settings for `rediss:` (a CA, a client certificate). */
  readonly tls?: ConnectionOptions | undefined;
}

/** Both connections of a session, its id, and when the request that made its key was sent. */
export interface OpenedSession {
  /** A server's connection, or a cluster's client (one connection per node, requests routed by slot). */
  readonly client: Redis | Cluster;
  /** The subscriber connection: the session's waiters hear of deletions here. */
  readonly subscriber: Redis;
  /** On a cluster: a subscriber connection to another node, for when the first one's node is gone. */
  readonly nextSubscriber: (() => Redis) | undefined;
  readonly id: string;
  readonly key: string;
  readonly openedAt: number;
}

/**
 * ioredis is loaded only for redis URLs. Chosen for what the driver leans on: `defineCommand` runs a
 * script by its SHA and sends its source again after a server lost its script cache (a restart);
 * requests queued while the connection is down are sent, in order, once it is back (every request of
 * the driver is safe to send twice); its cluster client routes each script by its first key's slot
 * and follows a slot's move or failover. Whether the server is a cluster is read from the first host
 * that answers.
 */
export async function openSession(options: RedisDriverOptions): Promise<OpenedSession> {
  const ioredis = await loadPeer('ioredis', 'a redis:// URL', () => import('ioredis'));
  const deadline = performance.now() + options.connectTimeoutMs;
  const { first, host } = await firstAnswering(options.hosts, deadline, options, (address) =>
    connection(ioredis.Redis, clientOptions(options, address)),
  );
  let client: Redis | Cluster = first;
  let subscriber: Redis | undefined;
  try {
    const cluster = /^cluster_enabled:1\s*$/m.test(await first.info('cluster'));
    let nextSubscriber: (() => Redis) | undefined;
    if (cluster) {
      if (options.target.db !== 0)
        throw new BatonError(
          `the Redis server at ${host} is a cluster node, and a cluster has only database 0 (the URL names ${options.target.db})`,
          'UNSUPPORTED_SERVER',
        );
      first.disconnect();
      const made = new ioredis.Cluster(options.hosts.map(hostAndPort), clusterOptions(options));
      client = made;
      scrubErrors(made);
      defineScripts(made);
      await ready(made, deadline, options, options.hosts.join(','));
      nextSubscriber = () => subscriberOn(ioredis.Redis, options, randomNode(made.nodes('all')));
      await refuseUnsafeServer(made.nodes('master'), host);
      // Any node serves a subscriber: one that does not answer is passed over for the next.
      const nodes = shuffled(made.nodes('all').map((node) => `${node.options.host}:${node.options.port}`));
      subscriber = (
        await firstAnswering(nodes, deadline, options, (address) => subscriberOn(ioredis.Redis, options, address))
      ).first;
    } else {
      if (options.hosts.length > 1)
        throw new InvalidArgumentError(
          'url hosts',
          options.hosts.join(','),
          `one host: several are the seed nodes of a Redis Cluster, and the server at ${host} is not in cluster mode`,
        );
      defineScripts(first);
      await refuseUnsafeServer([first], host);
      subscriber = first.duplicate();
      scrubErrors(subscriber);
    }
    if (!cluster) await ready(subscriber, deadline, options, host);
    const { id, key, openedAt } = await makeSessionKey(client, options, deadline);
    return { client, subscriber, nextSubscriber, id, key, openedAt };
  } catch (error) {
    client.disconnect();
    subscriber?.disconnect();
    if (error instanceof BatonError) throw error;
    if (error instanceof Error && error.name === 'ReplyError') throw mapOpenError(error);
    throw new BackendError(
      `could not open a Redis session at ${host}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/**
 * Makes the session's key, by the connect deadline. On a cluster the key's slot may be on a primary
 * that is down (its slots fail over or wait for it): an attempt that fails so is made again under
 * another id, whose key most likely sits on another primary.
 */
async function makeSessionKey(
  client: Redis | Cluster,
  options: RedisDriverOptions,
  deadline: number,
): Promise<{ id: string; key: string; openedAt: number }> {
  for (;;) {
    const id = randomBytes(8).toString('hex');
    const key = sessionKey(id);
    const openedAt = performance.now();
    // A value of this open's own: if the connection drops, ioredis sends the SET again, and a first
    // attempt that made the key (its reply lost) must not make the open fail.
    const mine = randomBytes(8).toString('hex');
    try {
      const made = await beforeDeadline(client.set(key, mine, 'PX', options.sessionTimeoutMs, 'NX'), deadline, options);
      if (made !== 'OK' && (await beforeDeadline(client.get(key), deadline, options)) !== mine)
        throw new BackendError(`the Redis session key ${key} exists already`);
      return { id, key, openedAt };
    } catch (error) {
      if (!retriable(error) || performance.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** The request's answer, or a BackendError once the connect deadline has passed (a request waits while its connection is down). */
async function beforeDeadline<T>(request: Promise<T>, deadline: number, options: RedisDriverOptions): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new BackendError(
            `the Redis session key was not made within the connect timeout (${options.connectTimeoutMs} ms)`,
          ),
        ),
      Math.max(0, deadline - performance.now()),
    );
  });
  request.catch(() => undefined);
  try {
    return await Promise.race([request, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A connection to the first of `addresses` that answers, each given an equal share of the time left. */
async function firstAnswering(
  addresses: readonly string[],
  deadline: number,
  options: RedisDriverOptions,
  make: (address: string) => Redis,
): Promise<{ first: Redis; host: string }> {
  for (const [index, host] of addresses.entries()) {
    const client = make(host);
    const last = index === addresses.length - 1;
    const share = last ? deadline : performance.now() + (deadline - performance.now()) / (addresses.length - index);
    try {
      await ready(client, share, options, host);
      return { first: client, host };
    } catch (error) {
      client.disconnect();
      if (last || !(error instanceof BackendError) || error instanceof AccessDeniedError) throw error;
    }
  }
  throw new BackendError('no Redis host given');
}

function hostAndPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(colon + 1)) };
}

/** The settings of a connection to `address`: a server's, or a cluster node's subscriber. */
function clientOptions(options: RedisDriverOptions, address: string): RedisOptions {
  const { target } = options;
  const { host, port } = hostAndPort(address);
  return {
    host,
    port,
    db: target.db,
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password() === undefined ? {} : { password: target.password()! }),
    // TLS checks the certificate against the host: by name (SNI too), or by IP address (no SNI then).
    ...(target.tls ? { tls: { ...(isIP(host) === 0 ? { servername: host } : {}), ...options.tls } } : {}),
    lazyConnect: true,
    // Requests wait for the connection to come back rather than fail: each is safe to send twice, and
    // the session's deadline, not a retry count, decides when to give up.
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
    autoResendUnfulfilledCommands: true,
    // The notifications subscribe again themselves after a reconnect: ioredis's own resubscription
    // leaves its command's failure unhandled when the connection closes again at once, which ends the
    // process (seen in a torture run: "Connection is closed." from the SUBSCRIBE sent on 'ready').
    autoResubscribe: false,
    connectTimeout: Math.max(500, Math.min(options.connectTimeoutMs, Math.floor(options.sessionTimeoutMs / 2))),
    retryStrategy: (times: number) => Math.min(20 * 2 ** Math.min(times, 5), 500),
    enableReadyCheck: true,
    // ioredis's disconnect ends the socket and destroys it after this long if it has not closed (2 s by
    // default): a connection dropped for its silence is destroyed this soon, so that the redial starts;
    // and after a refused dial, whose socket never says it closed, the timer does not keep a program alive.
    disconnectTimeout: 100,
  };
}

/**
 * A cluster's client: requests wait through a node's failover or a cluster without a quorum (each is
 * safe to send twice, and the session's deadline decides when to give up), and go to primaries only
 * (a replica's read may miss a write the primary answered). Nodes are named as they announce
 * themselves, so TLS checks each certificate against the node's address.
 */
function clusterOptions(options: RedisDriverOptions): ClusterOptions {
  const {
    host: _host,
    port: _port,
    retryStrategy: _retry,
    enableOfflineQueue: _queue,
    tls,
    ...node
  } = clientOptions(options, options.hosts[0]!);
  const retry = (times: number): number => Math.min(20 * 2 ** Math.min(times, 5), 500);
  return {
    redisOptions: { ...node, ...(tls === undefined ? {} : { tls: { ...options.tls } }) },
    lazyConnect: true,
    enableOfflineQueue: true,
    enableReadyCheck: true,
    scaleReads: 'master',
    clusterRetryStrategy: retry,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: Math.max(500, Math.floor(options.sessionTimeoutMs / 4)),
  };
}

/**
 * A subscriber connection to a node of the cluster (a `PUBLISH` reaches every node), or to the URL's
 * first host when the client knows no node now. It gives up redialling its node after a few
 * attempts, so that it ends and another node is chosen.
 */
function subscriberOn(RedisClass: typeof Redis, options: RedisDriverOptions, address: string | undefined): Redis {
  return connection(RedisClass, {
    ...clientOptions(options, address ?? options.hosts[0]!),
    retryStrategy: (times: number) => (times > 3 ? null : 50 * times),
  });
}

/** A connection whose errors have their credentials blanked (see `scrubErrors`). */
function connection(RedisClass: typeof Redis, settings: RedisOptions): Redis {
  const made = new RedisClass(settings);
  scrubErrors(made);
  return made;
}

function randomNode(nodes: readonly Redis[]): string | undefined {
  const node = nodes[Math.floor(Math.random() * nodes.length)];
  return node === undefined ? undefined : `${node.options.host}:${node.options.port}`;
}

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * Refuses a server on which baton cannot keep its promise, read from `INFO memory` of each primary
 * (`CONFIG GET` is an admin command an ACL user rarely has): an eviction policy other than
 * `noeviction` with a `maxmemory` set. Redis may then evict a session key (every one has an expiry,
 * so the `volatile-*` policies too) or a queue, and grant the lock to another session while its holder
 * learns of it only at its next renewal. Code `UNSAFE_SERVER_CONFIG`. Read once, at open: an operator
 * who changes the policy later (`CONFIG SET`) is not seen, nor, on a cluster, a primary that does not
 * answer at that moment (one is down, its slots waiting for it or its replica).
 */
async function refuseUnsafeServer(primaries: readonly Redis[], host: string): Promise<void> {
  for (const primary of primaries) {
    const memory = await primary.info('memory').catch((error: unknown) => {
      if (primaries.length === 1 || (error instanceof Error && error.name === 'ReplyError')) throw error;
      return '';
    });
    const maxmemory = Number(/^maxmemory:(\d+)\s*$/m.exec(memory)?.[1] ?? '0');
    const policy = /^maxmemory_policy:(\S+)\s*$/m.exec(memory)?.[1] ?? 'noeviction';
    if (maxmemory > 0 && policy !== 'noeviction') {
      const at = primaries.length === 1 ? host : `${primary.options.host}:${primary.options.port}`;
      throw new BatonError(
        `the Redis server at ${at} may evict keys (maxmemory ${maxmemory} with maxmemory-policy ${policy}): an evicted session key or queue would let two sessions hold one lock; set maxmemory-policy noeviction (or maxmemory 0) for baton's server`,
        'UNSAFE_SERVER_CONFIG',
      );
    }
  }
}

/**
 * Every error the connection emits has its credentials blanked at once: an AUTH that fails at a
 * reconnect (a rotated password) fails every queued command with its own error, whose `command.args`
 * hold the user and password; 'error' is emitted synchronously, before any of those commands' callers
 * sees the error. The connection's state reaches the session through the keep-alive, not this event.
 */
function scrubErrors(connection: Redis | Cluster): void {
  connection.on('error', (error: unknown) => void scrubbed(error));
}

function defineScripts(client: Redis | Cluster): void {
  for (const [name, { numberOfKeys, lua }] of Object.entries(SCRIPTS))
    client.defineCommand(name, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua });
}

/** Waits until the connection is ready, the deadline passes, the signal aborts or the server refuses us. */
function ready(client: Redis | Cluster, deadline: number, options: RedisDriverOptions, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let lastError: unknown;
    const finish = (error?: unknown): void => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onError);
      options.signal?.removeEventListener('abort', onAbort);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onReady = (): void => finish();
    const onError = (error: unknown): void => {
      lastError = scrubbed(error);
      const code = replyCode(error);
      if (code === 'WRONGPASS' || code === 'NOAUTH' || code === 'NOPERM') finish(mapOpenError(error as Error));
    };
    const onAbort = (): void => finish(options.signal!.reason);
    const timer = setTimeout(
      () => {
        const why = describeDialFailure(lastError, options.connectTimeoutMs);
        finish(
          new BackendError(
            `could not connect to Redis at ${host} within ${options.connectTimeoutMs} ms: ${why}`,
            lastError === undefined ? undefined : { cause: lastError },
          ),
        );
      },
      Math.max(0, deadline - performance.now()),
    );
    client.on('ready', onReady);
    client.on('error', onError);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (client.status === 'ready') return finish();
    if (client.status === 'wait') client.connect().catch(() => undefined);
  });
}

function mapOpenError(error: Error): Error {
  scrubbed(error);
  const code = replyCode(error);
  if (code === 'WRONGPASS' || code === 'NOAUTH' || code === 'NOPERM')
    return new AccessDeniedError(`Redis refused the user or password (${code})`, { cause: error });
  return new BackendError(`Redis refused to open a session (${code ?? 'error'})`, { cause: error });
}
