import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import type { Redis, RedisOptions } from 'ioredis';
import { AccessDeniedError, BackendError, BatonError } from '../../../recipes/errors.js';
import { loadPeer } from '../../metrics/peer.js';
import { describeDialFailure } from '../dial.js';
import type { RedisTarget } from '../../url.js';
import { replyCode, scrubbed } from './failures.js';
import { sessionKey } from './keys.js';
import { SCRIPTS } from './scripts.js';

/** What the Redis driver is opened with. */
export interface RedisDriverOptions {
  /** `host:port` (an IPv6 address in brackets). */
  readonly host: string;
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
  readonly client: Redis;
  /** The subscriber connection: the session's waiters hear of deletions here. */
  readonly subscriber: Redis;
  readonly id: string;
  readonly key: string;
  readonly openedAt: number;
}

/**
 * ioredis is loaded only for redis URLs. Chosen for what the driver leans on: `defineCommand` runs a
 * script by its SHA and sends its source again after a server lost its script cache (a restart);
 * requests queued while the
 * connection is down are sent, in order, once it is back (every request of the driver is safe to send
 * twice).
 */
export async function openSession(options: RedisDriverOptions): Promise<OpenedSession> {
  const { Redis } = await loadPeer('ioredis', 'a redis:// URL', () => import('ioredis'));
  const deadline = performance.now() + options.connectTimeoutMs;
  const client = new Redis(clientOptions(options));
  scrubErrors(client);
  defineScripts(client);
  let subscriber: Redis | undefined;
  try {
    await ready(client, deadline, options);
    await refuseUnsafeServer(client, options.host);
    subscriber = client.duplicate();
    scrubErrors(subscriber);
    await ready(subscriber, deadline, options);
    const id = randomBytes(8).toString('hex');
    const key = sessionKey(id);
    const openedAt = performance.now();
    // A value of this open's own: if the connection drops, ioredis sends the SET again, and a first
    // attempt that made the key (its reply lost) must not make the open fail.
    const mine = randomBytes(8).toString('hex');
    const made = await client.set(key, mine, 'PX', options.sessionTimeoutMs, 'NX');
    if (made !== 'OK' && (await client.get(key)) !== mine) throw new BackendError(`the Redis session key ${key} exists already`);
    return { client, subscriber, id, key, openedAt };
  } catch (error) {
    client.disconnect();
    subscriber?.disconnect();
    throw error instanceof Error && error.name === 'ReplyError' ? mapOpenError(error) : error;
  }
}

function clientOptions(options: RedisDriverOptions): RedisOptions {
  const colon = options.host.lastIndexOf(':');
  const host = options.host.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const { target } = options;
  return {
    host,
    port: Number(options.host.slice(colon + 1)),
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
 * Refuses a server on which baton cannot keep its promise, read from `INFO` (which ioredis's ready
 * check needs anyway; `CONFIG GET` is an admin command an ACL user rarely has):
 * - an eviction policy other than `noeviction` with a `maxmemory` set: Redis may then evict a session
 *   key (every one has an expiry, so the `volatile-*` policies too) or a queue, and grant the lock to
 *   another session while its holder learns of it only at its next renewal. Code `UNSAFE_SERVER_CONFIG`.
 * - cluster mode: every script reads the session keys of the entries it finds, which live in other
 *   slots, so every acquire would fail with a cross-slot error. Code `UNSUPPORTED_SERVER`.
 * Read once, at open: an operator who changes the policy later (`CONFIG SET`) is not seen.
 */
async function refuseUnsafeServer(client: Redis, host: string): Promise<void> {
  const [memory, cluster] = await Promise.all([client.info('memory'), client.info('cluster')]);
  if (/^cluster_enabled:1\s*$/m.test(cluster)) {
    throw new BatonError(`the Redis server at ${host} runs in cluster mode, which baton does not support (its scripts read session keys in other slots): use a single primary`, 'UNSUPPORTED_SERVER');
  }
  const maxmemory = Number(/^maxmemory:(\d+)\s*$/m.exec(memory)?.[1] ?? '0');
  const policy = /^maxmemory_policy:(\S+)\s*$/m.exec(memory)?.[1] ?? 'noeviction';
  if (maxmemory > 0 && policy !== 'noeviction') {
    throw new BatonError(
      `the Redis server at ${host} may evict keys (maxmemory ${maxmemory} with maxmemory-policy ${policy}): an evicted session key or queue would let two sessions hold one lock; set maxmemory-policy noeviction (or maxmemory 0) for baton's server`,
      'UNSAFE_SERVER_CONFIG',
    );
  }
}

/**
 * Every error the connection emits has its credentials blanked at once: an AUTH that fails at a
 * reconnect (a rotated password) fails every queued command with its own error, whose `command.args`
 * hold the user and password; 'error' is emitted synchronously, before any of those commands' callers
 * sees the error. The connection's state reaches the session through the watchdog, not this event.
 */
function scrubErrors(connection: Redis): void {
  connection.on('error', (error: unknown) => void scrubbed(error));
}

function defineScripts(client: Redis): void {
  for (const [name, { numberOfKeys, lua }] of Object.entries(SCRIPTS)) client.defineCommand(name, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua });
}

/** Waits until the connection is ready, the deadline passes, the signal aborts or the server refuses us. */
function ready(client: Redis, deadline: number, options: RedisDriverOptions): Promise<void> {
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
    const timer = setTimeout(() => {
      const why = describeDialFailure(lastError, options.connectTimeoutMs);
      finish(new BackendError(`could not connect to Redis at ${options.host} within ${options.connectTimeoutMs} ms: ${why}`, lastError === undefined ? undefined : { cause: lastError }));
    }, Math.max(0, deadline - performance.now()));
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
  if (code === 'WRONGPASS' || code === 'NOAUTH' || code === 'NOPERM') return new AccessDeniedError(`Redis refused the user or password (${code})`, { cause: error });
  return new BackendError(`Redis refused to open a session (${code ?? 'error'})`, { cause: error });
}
