import { channel } from 'node:diagnostics_channel';

import type { Session, SessionState } from '../recipes/contract.js';
import { backendOf } from './backend-name.js';

/**
 * What `baton-locks:session:state` carries: a session opened by connect() (`previous` undefined,
 * `state` connected) and each change of its state after that, so that a subscriber can count
 * sessions by state without holding on to them (a session's last message is `lost` or `closed`).
 */
export interface SessionStateMessage {
  readonly session: Session;
  /** `zookeeper`, `etcd`, `postgresql`, `redis`, `memory` (as the spans' `baton.backend`). */
  readonly backend: string | undefined;
  readonly state: SessionState;
  /** The state it left; undefined when the session was just opened. */
  readonly previous: SessionState | undefined;
}

/** The channel every session's opening and state changes are told on (docs/observability.md). */
export const SESSION_STATE_CHANNEL = channel('baton-locks:session:state');

/** Tells a session's opening or state change; builds nothing while nobody subscribes. */
export function tellSessionState(session: Session, state: SessionState, previous: SessionState | undefined): void {
  if (!SESSION_STATE_CHANNEL.hasSubscribers) return;
  const message: SessionStateMessage = { session, backend: backendOf(session), state, previous };
  SESSION_STATE_CHANNEL.publish(message);
}
