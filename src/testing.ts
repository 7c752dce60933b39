/**
 * `baton-locks/testing`: powers for tests, never needed in production. Sessions opened with this
 * module's `connect` count into the counters below, obey the fault hooks, and show their driver's state
 * through each backend's `...ProbeOf(session)`; sessions opened with the package's own `connect` have
 * none of it. `expireMemorySession` works on any memory session.
 *
 * Each backend's probe is what its descriptor's `testing` kit makes (src/backends/<name>/testing.ts):
 * this module hands the kit's probe to the driver and the session back to the kit, and re-exports the
 * kits' counters, hooks and `...ProbeOf` (listed in src/backends/test-kits.ts) for tests to import
 * from one place.
 */
import type { Session } from '../recipes/contract.js';
import type { Backend, TestKit } from './backends/backend.js';
import { type ConnectOptions, connectWith, type ProbeMaker } from './connect.js';

export * from './backends/test-kits.js';

/** Each backend's kit, loaded once (a backend without one opens its drivers with no probe). */
const kits = new Map<Backend, Promise<TestKit | undefined>>();

const probeFor: ProbeMaker = async (backend) => {
  if (!kits.has(backend)) kits.set(backend, backend.testing?.() ?? Promise.resolve(undefined));
  const kit = await kits.get(backend);
  if (kit === undefined) return undefined;
  const probe = kit.newProbe();
  return { probe, opened: (session) => kit.opened(session, probe) };
};

/** The package's `connect`, with this module's counters, hooks and probes wired into the session. */
export function connect(url: string, options: ConnectOptions = {}): Promise<Session> {
  return connectWith(url, options, probeFor);
}
