import { type IBackoff, noop } from 'cockatiel';
import {
  Etcd3,
  EtcdAuthenticationFailedError,
  EtcdPermissionDeniedError,
  GRPCDeadlineExceededError,
  type IOptions,
  isRecoverableError,
} from 'etcd3';

import { untilAborted } from '../../../recipes/contract.js';
import { AccessDeniedError, BackendError } from '../../../recipes/errors.js';
import { backoff } from '../../backoff.js';
import { describeDialFailure, dialErrorCode } from '../dial.js';
import { closeServicesPromptly } from './close.js';
import { attemptMs, OUT_OF_SPACE, outOfSpace } from './failures.js';
import { Members } from './members.js';

export interface EtcdDriverOptions {
  /** `http://host:port` each. */
  readonly hosts: readonly string[];
  /** Key prefix every queue lives under, without a trailing `/`. */
  readonly namespace: string;
  readonly ttlSeconds: number;
  readonly connectTimeoutMs: number;
  /** Passed through to etcd3: `auth`, `credentials` (TLS), `grpcOptions`. */
  readonly client?: Pick<IOptions, 'auth' | 'credentials' | 'grpcOptions'>;
  /** Gives up connecting when it aborts (the client is closed). */
  readonly signal?: AbortSignal;
}

/** An etcd3 client tuned for coordination, with a lease granted: what a driver opens with. */
export interface OpenedLease {
  readonly client: Etcd3;
  readonly members: Members;
  readonly lease: string;
  readonly timeoutMs: number;
  /** `performance.now()` just before the grant that succeeded was sent. */
  readonly openedAt: number;
}

/**
 * How long etcd3's watch manager waits before it opens a broken watch stream again: 50 ms, doubling
 * up to `capMs` (a quarter of the TTL, at most a second). etcd3's default grows to 30 s: waiters
 * would sleep that long after a member restart, and the pending timer would keep a closed client's
 * process alive as long.
 */
class WatchBackoff implements IBackoff<unknown> {
  constructor(
    readonly duration: number,
    private readonly capMs: number,
  ) {}

  next(): WatchBackoff {
    return new WatchBackoff(Math.min(Math.max(this.duration * 2, 50), this.capMs), this.capMs);
  }
}

/** The etcd3 client for a session: no breaker, short reconnects, keepalive pings, auth with deadlines. */
function tunedClient(options: EtcdDriverOptions): Etcd3 {
  return new Etcd3({
    hosts: [...options.hosts],
    dialTimeout: options.connectTimeoutMs,
    // No circuit breaker and no retries inside etcd3: its breaker fails every call to a member for
    // 5 s after three errors, longer than a short lease. The driver retries until the session's
    // deadline instead, each attempt on a randomly chosen member.
    faultHandling: {
      host: () => noop,
      global: noop,
      watchBackoff: new WatchBackoff(0, Math.min(1_000, options.ttlSeconds * 250)),
    },
    ...options.client,
    // etcd3 fetches the auth token from the members in a fixed order, with no deadline of its own:
    // a member that hangs would hold every call (connect and close included). Each try gets a third
    // of the TTL, then the next member is asked.
    ...(options.client?.auth === undefined
      ? {}
      : {
          auth: {
            callOptions: () => ({ deadline: Date.now() + attemptMs(options.ttlSeconds * 1000) }),
            ...options.client.auth,
          },
        }),
    // gRPC waits 1 s (growing to 2 min) before dialling a member again, longer than a short lease
    // leaves; a coordination client wants to be back within a fraction of its TTL. Keepalive pings
    // find a connection whose member stopped answering (a watch stream on it would stay silent);
    // etcd refuses pings more often than every 5 s by default.
    grpcOptions: {
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1_000,
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      ...options.client?.grpcOptions,
    },
  });
}

/** Connects and grants the session's lease, retrying on other members until the connect timeout. */
export async function openLease(options: EtcdDriverOptions): Promise<OpenedLease> {
  const client = tunedClient(options);
  const members = new Members(client);
  const connecting = closeServicesPromptly(client);
  const deadline = Date.now() + options.connectTimeoutMs;
  let dialError: unknown; // the last attempt may end on its deadline, saying less than one before it
  for (let attempt = 0; ; attempt += 1) {
    const openedAt = performance.now();
    try {
      options.signal?.throwIfAborted(); // before each attempt: a grant sent after the abort would be left behind
      // Each attempt gets a part of the budget, so that a member that hangs does not take all of it;
      // the part doubles with each attempt, so that a slow link (whose first attempt also dials the
      // connection, and a timed-out attempt closes it) still gets through.
      const attemptDeadline = Math.min(
        deadline,
        Date.now() + attemptMs(options.ttlSeconds * 1000) * 2 ** Math.min(attempt, 6),
      );
      const granting = members.attempt(
        () => client.leaseClient.leaseGrant({ TTL: options.ttlSeconds, ID: 0 }, { deadline: attemptDeadline }),
        options.ttlSeconds * 1000,
      );
      const grant = await (options.signal === undefined ? granting : untilAborted(granting, options.signal));
      connecting.restore();
      return { client, members, lease: grant.ID, timeoutMs: Number(grant.TTL) * 1000, openedAt };
    } catch (error) {
      // First: the reason may be any value, which etcd3's error checks below cannot take.
      if (options.signal?.aborted === true) {
        client.close();
        throw options.signal.reason;
      }
      if (dialErrorCode(error) !== undefined) dialError = error;
      // Each attempt goes to a member chosen at random: one that is down must not fail the connect.
      if (isRecoverableError(error as Error) && !outOfSpace(error) && Date.now() < deadline) {
        await backoff(attempt);
        continue;
      }
      client.close();
      if (error instanceof EtcdAuthenticationFailedError)
        throw new AccessDeniedError('etcd refused the user name or password (authentication failed)');
      if (error instanceof EtcdPermissionDeniedError)
        throw new AccessDeniedError('etcd refused to grant a lease to this user (permission denied)');
      if (outOfSpace(error)) throw new BackendError(OUT_OF_SPACE, { cause: error });
      const why = dialError ?? (error instanceof GRPCDeadlineExceededError ? undefined : error);
      throw new BackendError(
        `could not open an etcd session at ${options.hosts.join(',')} within ${options.connectTimeoutMs} ms: ${describeDialFailure(why, options.connectTimeoutMs)}`,
        { cause: why ?? error },
      );
    }
  }
}
