import type { Session } from '../../recipes/contract.js';
import { InvalidArgumentError } from '../../recipes/errors.js';
import type { TestKit } from './backend.js';

/** What every driver's probe has: the driver shows its view once, the test reads it afterwards. */
interface Viewing<View> {
  expose(view: View): void;
  readonly view: View;
}

/** One backend's probes of the sessions opened with `baton-locks/testing`. */
export interface SessionProbes<Probe> {
  /** The probe of a session opened with `baton-locks/testing`'s connect; `InvalidArgumentError` for another. */
  probeOf(session: Session): Probe;
  /** What the backend's descriptor hands `baton-locks/testing`. */
  readonly kit: TestKit;
}

/**
 * The probes of one backend's test sessions, each the object `fields` makes (so that getters in it stay
 * live) with the view its driver exposes, kept per session. `who` names the backend's sessions in the
 * error for a session opened elsewhere (`an etcd`).
 */
export function sessionProbes<View, Probe extends Viewing<View>>(
  who: string,
  fields: () => Omit<Probe, keyof Viewing<View>>,
): SessionProbes<Probe> {
  const made = new WeakMap<object, Probe>();
  const newProbe = (): Probe => {
    let view: View | undefined;
    const exposed = (): View => {
      if (view === undefined) throw new Error('the driver has not shown its view yet');
      return view;
    };
    return Object.defineProperties(fields(), {
      expose: { value: (shown: View) => (view = shown) },
      view: { enumerable: true, get: exposed },
    }) as Probe;
  };
  return {
    probeOf(session) {
      const probe = made.get(session);
      if (probe !== undefined) return probe;
      throw new InvalidArgumentError('session', session.id, `${who} session opened with baton-locks/testing's connect`);
    },
    kit: { newProbe, opened: (session, probe) => made.set(session, probe as Probe) },
  };
}
