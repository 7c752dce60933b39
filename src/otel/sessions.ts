import type { Attributes, Counter, Meter, UpDownCounter } from '@opentelemetry/api';

import type { Session, SessionState } from '../../recipes/contract.js';
import type { SessionStateMessage } from '../session-channel.js';
import { ATTRIBUTES } from './attributes.js';

/** The states a live session is counted under; a lost or closed one is no longer counted. */
type LiveState = Extract<SessionState, 'connected' | 'suspended'>;

function isLive(state: SessionState | undefined): state is LiveState {
  return state === 'connected' || state === 'suspended';
}

/**
 * The sessions-by-state gauge and the session losses as OpenTelemetry instruments, fed by the
 * `baton-locks:session:state` channel: `baton.session.count` (an up-down counter of live sessions by
 * `baton.session.state` and `baton.backend`) and `baton.session.losses`. Nothing is kept per session
 * but a WeakSet entry, so sessions that come and go leave nothing behind; `stop()` takes back what this
 * instance added, so a stopped instrumentation reads zero.
 */
export class SessionInstruments {
  readonly #count: UpDownCounter;
  readonly #losses: Counter;
  /** The sessions this instance counts (those it saw opened or change state while it listened). */
  readonly #counted = new WeakSet<Session>();
  /** What this instance added to `#count`, by attribute set, to take back at `stop()`. */
  readonly #added = new Map<string, { attributes: Attributes; n: number }>();

  constructor(meter: Meter) {
    this.#count = meter.createUpDownCounter('baton.session.count', {
      description: 'Live sessions (connected or suspended) by state.',
    });
    this.#losses = meter.createCounter('baton.session.losses', {
      description: 'Sessions that became lost (expired, or their client-side deadline passed).',
    });
  }

  /** A session opened or changed state. */
  changed(message: SessionStateMessage): void {
    const { session, state, previous } = message;
    const backend = message.backend ?? 'unknown';
    if (state === 'lost') this.#losses.add(1, { [ATTRIBUTES.backend]: backend });
    if (this.#counted.has(session) && isLive(previous)) this.#add(previous, backend, -1);
    if (isLive(state)) {
      this.#counted.add(session);
      this.#add(state, backend, 1);
    } else this.#counted.delete(session);
  }

  /** Takes back every session this instance still counts: the instrumentation stops. */
  stop(): void {
    for (const { attributes, n } of this.#added.values()) if (n !== 0) this.#count.add(-n, attributes);
    this.#added.clear();
  }

  #add(state: LiveState, backend: string, n: number): void {
    const key = `${state}\u0000${backend}`;
    const attributes = { [ATTRIBUTES.sessionState]: state, [ATTRIBUTES.backend]: backend };
    const added = this.#added.get(key) ?? { attributes, n: 0 };
    added.n += n;
    this.#added.set(key, added);
    this.#count.add(n, attributes);
  }
}
