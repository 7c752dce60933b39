import type { Session } from '../recipes/contract.js';

/**
 * Which backend each session runs on, for the tracing attributes: the recipes do not know (by design),
 * and a session does not say. Set by connect() from the backend's descriptor.
 */
const backends = new WeakMap<Session, string>();

/**
 * Records the backend of a session just opened: its descriptor's title in lower case (`zookeeper`,
 * `etcd`, `postgresql`, `redis`, `memory`: the product in full, as OpenTelemetry's `db.system.name`).
 */
export function nameBackend(session: Session, name: string): void {
  backends.set(session, name);
}

/** The backend a session runs on (`zookeeper`, `etcd`, `postgresql`, `redis`, `memory`), if connect() made it. */
export function backendOf(session: Session): string | undefined {
  return backends.get(session);
}
