import type { Session } from '../recipes/contract.js';
import type { Scheme } from './url.js';

/**
 * Which backend each session runs on, for the tracing attributes: the recipes do not know (by design),
 * and a session does not say. Set by connect() from the URL's scheme.
 */
const backends = new WeakMap<Session, string>();

/** The backend names used in attributes (OpenTelemetry's `db.system.name` style: the product, in full). */
const NAMES: Record<Scheme, string> = {
  zk: 'zookeeper',
  etcd: 'etcd',
  postgres: 'postgresql',
  redis: 'redis',
  memory: 'memory',
};

/** Records the backend of a session just opened from a URL of `scheme`. */
export function nameBackend(session: Session, scheme: Scheme): void {
  backends.set(session, NAMES[scheme]);
}

/** The backend a session runs on (`zookeeper`, `etcd`, `postgresql`, `redis`, `memory`), if connect() made it. */
export function backendOf(session: Session): string | undefined {
  return backends.get(session);
}
