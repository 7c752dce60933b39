import { EtcdLeaseInvalidError, EtcdPermissionDeniedError, isRecoverableError } from 'etcd3';

import { AccessDeniedError, BackendError, BatonError, SessionLostError } from '../../../recipes/errors.js';
import type { FailurePolicy } from '../core.js';

export const OUT_OF_SPACE =
  'etcd is out of space (its NOSPACE alarm is raised): it refuses new entries and leases until an operator compacts and defragments it and disarms the alarm';

/** etcd's answer to a write while its NOSPACE alarm is raised. */
export function outOfSpace(error: unknown): boolean {
  return error instanceof Error && error.message.includes('database space exceeded');
}

/**
 * A request to send again: one that failed on the way (etcd3's recoverable errors), but not a write
 * refused for lack of space, which etcd counts among them (RESOURCE_EXHAUSTED) though it lasts until an
 * operator steps in: retried, every acquire would hang, past its timeout, for as long as the alarm.
 */
export function retriable(error: unknown): boolean {
  return !(error instanceof BatonError) && isRecoverableError(error as Error) && !outOfSpace(error);
}

/** How long one attempt of a request may take: a third of the TTL, so a hung member costs one of three. */
export function attemptMs(ttlMs: number): number {
  return Math.max(Math.floor(ttlMs / 3), 500);
}

/** How etcd's failures read, for the lease `id` (hex) under `namespace`. */
export function etcdFailures(id: string, namespace: string): FailurePolicy {
  const gone = (cause?: unknown): SessionLostError =>
    new SessionLostError(`etcd lease ${id} is gone`, cause === undefined ? undefined : { cause });
  return {
    retriable,
    // A request naming the lease (a put) is refused once the lease is gone: the session is lost.
    sessionGone: (error) => error instanceof EtcdLeaseInvalidError,
    lostError: gone,
    map(error: unknown): Error {
      if (error instanceof BatonError) return error;
      if (outOfSpace(error)) return new BackendError(OUT_OF_SPACE, { cause: error });
      if (error instanceof EtcdPermissionDeniedError) {
        return new AccessDeniedError(
          `etcd refused the request (permission denied): this user may not use ${namespace}/`,
          { cause: error },
        );
      }
      if (error instanceof EtcdLeaseInvalidError) return gone(error);
      return new BackendError('etcd request failed', { cause: error });
    },
  };
}
