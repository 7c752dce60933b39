/**
 * An operator's force release: one entry of another session (a stuck holder, a waiter nobody needs)
 * deleted on the server, as `baton release` does. The holder's session notices at its next check of
 * its holds (a sixth of its session timeout) and aborts the handle's signal with a `LockLostError`
 * whose `reason` is `revoked`; the next in line is granted as after any release.
 */
import { coreOf, type Session, untilAborted } from './contract.js';
import { deadline } from './deadline.js';
import { InvalidArgumentError, UnknownEntryError } from './errors.js';
import type { LockKind } from './events.js';
import { assertUsable } from './queue.js';
import { type RequestOptions, validateName, validateRequestOptions } from './validate.js';

const OPTIONS = ['timeoutMs', 'signal'];

/** Options of `forceRelease`. A delete given up (timeout or signal) may still be applied. */
export type ForceReleaseOptions = RequestOptions;

/** The entry `forceRelease` removed, as it stood in the queue. */
export interface RevokedEntry {
  /** The lock name. */
  readonly name: string;
  /** The entry's key (what `participants()` and `baton inspect` show as `key`). */
  readonly key: string;
  /** The entry's kind as stored (`lock`, `read`, `write`, `candidate`, `semaphore_2_5`, a peer's `exclusive`). */
  readonly kind: string;
  /** The session that owned it. */
  readonly owner: string;
  /** Its fencing token: the resources it protected should refuse it from now on. */
  readonly fencingToken: bigint;
}

/**
 * Deletes the entry `key` of the queue `name`, whichever session owns it (baton's, or a peer's:
 * Curator, kazoo, etcd's Go recipes), and tells a `revoked` lock event on this session naming it as
 * the revoker. Resolves with the entry removed. Rejects with `UnknownEntryError` (nothing removed) if
 * `key` is no entry of that queue, or was gone before the delete; `InvalidNameError` or
 * `InvalidArgumentError` for bad input; `LockTimeoutError` or the signal's reason when given up.
 */
export async function forceRelease(
  session: Session,
  name: string,
  key: string,
  options?: ForceReleaseOptions,
): Promise<RevokedEntry> {
  const queue = validateName(name);
  if (typeof key !== 'string' || key.length === 0)
    throw new InvalidArgumentError('key', key, "an entry's key, as participants() shows it");
  const { timeoutMs, signal } = validateRequestOptions(options, OPTIONS);
  const core = coreOf(session);
  assertUsable(session);
  const leave = core.enter();
  const wait = deadline(`the force release of ${key} in "${queue}"`, timeoutMs, [signal, session.signal]);
  try {
    wait.signal.throwIfAborted();
    const described = await untilAborted(core.describe(queue), wait.signal);
    const found = described.find((info) => info.entry.key === key);
    if (found === undefined || !(await untilAborted(core.backend.revoke(found.entry), wait.signal)))
      throw new UnknownEntryError(queue, key);
    const { entry, owner } = found;
    core.report({
      type: 'revoked',
      name: queue,
      kind: lockKindOf(entry.kind),
      key,
      owner,
      revokedBy: session.id,
      fencingToken: entry.fencingToken,
    });
    return { name: queue, key, kind: entry.kind, owner, fencingToken: entry.fencingToken };
  } finally {
    wait.dispose();
    leave();
  }
}

/** The event kind of a stored kind: a semaphore's carries its counts; a peer's unknown kind is a lock. */
function lockKindOf(kind: string): LockKind {
  if (kind.startsWith('semaphore_')) return 'semaphore';
  return kind === 'read' || kind === 'write' || kind === 'candidate' ? kind : 'lock';
}
