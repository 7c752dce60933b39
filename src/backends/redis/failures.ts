import { AccessDeniedError, BackendError, BatonError, SessionLostError } from '../../../recipes/errors.js';
import type { FailurePolicy } from '../core.js';

/**
 * The code of a Redis error reply: its first word (`WRONGPASS`, `LOADING`, baton's own `BATONSESSION`),
 * which is the protocol's error code. Undefined for anything that is not an error reply (a lost
 * connection, a closed client).
 */
export function replyCode(error: unknown): string | undefined {
  if (!(error instanceof Error) || error.name !== 'ReplyError') return undefined;
  return /^[A-Z]+/.exec(error.message)?.[0];
}

/**
 * The error with any credentials it carries hidden: ioredis puts the command on a failed reply
 * (`error.command.args`), which for AUTH and HELLO holds the password.
 */
export function scrubbed<T>(error: T): T {
  const command = (error as { command?: { name?: unknown; args?: unknown } } | null)?.command;
  if (command !== undefined && typeof command.name === 'string' && /^(auth|hello|migrate)$/i.test(command.name))
    command.args = ['(not shown)'];
  return error;
}

/** Replies that say "not now": the server is loading its data, busy with a script, without its primary, or a cluster without all its slots served. */
const TRANSIENT = new Set(['LOADING', 'BUSY', 'TRYAGAIN', 'MASTERDOWN', 'CLUSTERDOWN']);
const DENIED = new Set(['NOAUTH', 'WRONGPASS', 'NOPERM']);

/** Whether sending the request again may help: a lost connection or a "not now" reply, not ours nor a bug. */
export function retriable(error: unknown): boolean {
  // Ours, or a bug (a TypeError...): sending it again would not help.
  if (error instanceof BatonError || error instanceof TypeError || error instanceof RangeError) return false;
  const code = replyCode(error);
  return code === undefined || TRANSIENT.has(code);
}

/** How Redis failures read for the session `id` under `namespace`. */
export function redisFailures(id: string, namespace: string): FailurePolicy {
  const gone = (cause?: unknown): SessionLostError =>
    new SessionLostError(
      `Redis session ${id} is gone (its key expired or was deleted)`,
      cause === undefined ? undefined : { cause },
    );
  return {
    retriable,
    sessionGone: (error) => replyCode(error) === 'BATONSESSION',
    lostError: gone,
    map(error) {
      if (error instanceof BatonError) return error;
      scrubbed(error);
      const code = replyCode(error);
      if (code === 'BATONSESSION') return gone(error);
      if (code !== undefined && DENIED.has(code)) {
        return new AccessDeniedError(
          `Redis refused the request (${code}): this user may not use the keys baton:{${namespace}/...}, baton:session:* or run scripts`,
          { cause: error },
        );
      }
      return new BackendError(`Redis request failed${code === undefined ? '' : ` (${code})`}`, { cause: error });
    },
  };
}
