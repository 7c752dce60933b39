import { AccessDeniedError, BackendError, BatonError, ClosedError, SessionLostError } from '../../../recipes/errors.js';
import type { DriverLife, FailurePolicy } from '../core.js';
import { isCode, ZkCode, ZkServerCode } from './client.js';

/** The server says the session no longer exists. */
export function sessionGone(error: unknown): boolean {
  return isCode(error, ZkCode.SESSION_EXPIRED, ZkServerCode.UNKNOWN_SESSION);
}

/**
 * The request did not complete on this connection and may be sent again once the client has
 * (re)connected. (A request on a connection the session has moved away from is not answered
 * SESSION_MOVED: ZooKeeper closes that connection instead, which the client reports as a loss.)
 */
export function retriable(error: unknown): boolean {
  return isCode(error, ZkCode.CONNECTION_LOSS);
}

/** How ZooKeeper's failures read, for the session `id` (hex) under `namespace`. */
export function zkFailures(id: string, namespace: string, status: () => DriverLife): FailurePolicy {
  const expired = (cause?: unknown): SessionLostError =>
    new SessionLostError(`ZooKeeper session 0x${id} expired`, cause === undefined ? undefined : { cause });
  return {
    retriable,
    sessionGone,
    lostError: expired,
    map(error: unknown): Error {
      if (sessionGone(error)) return expired(error);
      if (retriable(error) && status() === 'closed') return new ClosedError();
      if (isCode(error, ZkCode.NO_AUTH)) {
        return new AccessDeniedError(
          `ZooKeeper refused the request (NoAuth): this session's credentials do not grant it under ${namespace}`,
          { cause: error },
        );
      }
      if (error instanceof BatonError) return error;
      return new BackendError('ZooKeeper request failed', { cause: error });
    },
  };
}
