import type { Attributes } from '@opentelemetry/api';

import type { LockKind } from '../../recipes/events.js';
import type { HoldMessage, WaitMessage, WaitOutcome } from '../../recipes/trace.js';
import { backendOf } from '../backend-name.js';

/**
 * The attribute names, in the OpenTelemetry semantic-convention style: lower case, dot-separated
 * namespaces under `baton.`, snake_case within a part, durations in seconds.
 */
export const ATTRIBUTES = {
  lockName: 'baton.lock.name',
  lockKind: 'baton.lock.kind',
  recipe: 'baton.recipe',
  backend: 'baton.backend',
  sessionId: 'baton.session.id',
  sessionState: 'baton.session.state',
  try: 'baton.lock.try',
  timeout: 'baton.lock.timeout',
  outcome: 'baton.lock.outcome',
  queuePosition: 'baton.lock.queue.position',
  waitDuration: 'baton.lock.wait.duration',
  holdDuration: 'baton.lock.hold.duration',
  fencingToken: 'baton.lock.fencing_token',
  errorType: 'error.type',
} as const;

/** The recipe an entry kind belongs to, unless the wait names its own (a MultiLock's mutex entries: `multilock`). */
const RECIPES: Record<LockKind, string> = {
  lock: 'mutex',
  read: 'read_write_lock',
  write: 'read_write_lock',
  candidate: 'leader_election',
  semaphore: 'semaphore',
};

/** The outcomes as attribute values (snake_case, as semantic conventions write enumerations). */
export const OUTCOMES: Record<WaitOutcome, string> = {
  granted: 'granted',
  busy: 'busy',
  timedOut: 'timed_out',
  aborted: 'aborted',
  failed: 'failed',
};

/** What is known when a wait starts. */
export function startAttributes(message: WaitMessage): Attributes {
  const attributes: Attributes = {
    [ATTRIBUTES.lockName]: message.name,
    [ATTRIBUTES.lockKind]: message.kind,
    [ATTRIBUTES.recipe]: message.recipe ?? RECIPES[message.kind],
    [ATTRIBUTES.backend]: backendOf(message.session) ?? 'unknown',
    [ATTRIBUTES.sessionId]: message.session.id,
    [ATTRIBUTES.try]: message.try,
  };
  if (message.timeoutMs !== undefined) attributes[ATTRIBUTES.timeout] = message.timeoutMs / 1_000;
  return attributes;
}

/** What a wait's end adds. The fencing token is a string: it is a 64-bit integer, beyond a double's exact range. */
export function endAttributes(message: WaitMessage): Attributes {
  const attributes: Attributes = { [ATTRIBUTES.outcome]: OUTCOMES[outcomeOf(message)] };
  if (message.position !== undefined) attributes[ATTRIBUTES.queuePosition] = message.position;
  if (message.waitMs !== undefined) attributes[ATTRIBUTES.waitDuration] = message.waitMs / 1_000;
  if (message.fencingToken !== undefined) attributes[ATTRIBUTES.fencingToken] = message.fencingToken.toString();
  return attributes;
}

/** A wait that threw before the loop could tell its outcome (a closed session, bad state) failed. */
export function outcomeOf(message: WaitMessage): WaitOutcome {
  return message.outcome ?? (message.error !== undefined ? 'failed' : 'granted');
}

/** The attributes of a hold's span and of the events on it. */
export function holdAttributes(hold: HoldMessage): Attributes {
  return {
    [ATTRIBUTES.lockName]: hold.wait.name,
    [ATTRIBUTES.lockKind]: hold.wait.kind,
    [ATTRIBUTES.recipe]: hold.wait.recipe ?? RECIPES[hold.wait.kind],
    [ATTRIBUTES.backend]: backendOf(hold.wait.session) ?? 'unknown',
    [ATTRIBUTES.sessionId]: hold.wait.session.id,
    [ATTRIBUTES.fencingToken]: hold.fencingToken.toString(),
  };
}

/** The lock's own attributes, few enough for metric dimensions (no session id, no token). */
export function metricAttributes(wait: WaitMessage, lockLabel: (name: string) => string): Attributes {
  return {
    [ATTRIBUTES.lockName]: lockLabel(wait.name),
    [ATTRIBUTES.lockKind]: wait.kind,
    [ATTRIBUTES.backend]: backendOf(wait.session) ?? 'unknown',
  };
}
