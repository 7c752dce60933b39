import type { Session } from '../recipes/contract.js';
import { InvalidArgumentError } from '../recipes/errors.js';
import { nameBackend } from './backend-name.js';
import type { Backend, ParsedUrl } from './backends/backend.js';
import { namesToLookUp, refuseUnknownNames } from './backends/dial.js';
import { backoff } from './backoff.js';
import type { Driver } from './driver-port.js';
import type { ConnectOptions } from './options.js';
import { BatonSession, internalsOf } from './session.js';
import { tellSessionState } from './session-channel.js';
import { refuseMisfits, type Settings, validateConnectOptions } from './settings.js';
import { resolveUrl } from './url.js';

export type { ConnectOptions } from './options.js';

/**
 * @internal What `baton-locks/testing` hands `connectWith`: for each driver opened, the probe its
 * backend's test kit makes, and word of the session opened over it. None in production.
 */
export type ProbeMaker = (backend: Backend) => Promise<{ probe: unknown; opened(session: object): void } | undefined>;

/**
 * Opens a session on the backend the URL names: `zk://h1:2181,h2:2181/myapp`, `etcd://h1:2379/myapp`,
 * `postgres://user[:password]@host:5432/db?namespace=myapp` (also `postgresql://`; needs the optional
 * peer dependency pg), `redis://[user:password@]host:6379[/db]?namespace=myapp` (`rediss://` with TLS;
 * needs the optional peer dependency ioredis), `memory://test` (one store per name, in this process).
 * The URL's path is the namespace every lock lives under (default `baton`; on PostgreSQL and Redis the
 * `namespace` parameter). Close the session with `session.close()` when done.
 *
 * Rejects with `InvalidArgumentError` for a bad URL or option (before anything is sent), with
 * `BackendError` when no server answers within `connectTimeoutMs` (the cause says why: refused,
 * unresolvable), with `AccessDeniedError` when the server refuses the user name or password, with
 * `BatonError` code `MISSING_DEPENDENCY` when pg or ioredis is needed and not installed, and with
 * `signal.reason` when `signal` aborts.
 */
export async function connect(url: string, options: ConnectOptions = {}): Promise<Session> {
  return connectWith(url, options, undefined);
}

/**
 * @internal `connect`, with a probe handed to each driver it opens (a successor's too):
 * `baton-locks/testing` opens its sessions so. The package's `connect` hands none.
 */
export async function connectWith(
  url: string,
  options: ConnectOptions,
  probes: ProbeMaker | undefined,
): Promise<Session> {
  const session = await open(url, options, probes);
  if (validateConnectOptions(options).reconnectAfterLoss) replaceWhenLost(session, url, options, probes);
  return session;
}

/** Opens a successor once `session` is lost; gives up only if the lost session is closed meanwhile. */
function replaceWhenLost(session: Session, url: string, options: ConnectOptions, probes: ProbeMaker | undefined): void {
  const onState = (state: string): void => {
    if (state !== 'lost') return;
    session.off('state', onState);
    void (async () => {
      for (let attempt = 0; ; attempt += 1) {
        if ((session.state as string) === 'closed') return;
        try {
          // The first connect's signal was for that connect only.
          const { signal: _first, ...rest } = options;
          const next = await connectWith(url, rest, probes);
          if ((session.state as string) === 'closed') {
            await next.close();
            return;
          }
          internalsOf(session).replacedBy(next);
          return;
        } catch {
          await backoff(Math.min(attempt, 6)); // the servers may be down for a while
        }
      }
    })();
  };
  session.on('state', onState);
}

async function open(url: string, options: ConnectOptions, probes: ProbeMaker | undefined): Promise<BatonSession> {
  const { backend, parsed } = resolveUrl(url);
  const settings = validateConnectOptions(options);
  refuseMisfits(settings, backend, parsed);
  const sessionOptions = {
    onSuspend: settings.onSuspend,
    onWaiterLost: settings.onWaiterLost,
    ...(settings.deadlineMarginMs === undefined ? {} : { deadlineMarginMs: settings.deadlineMarginMs }),
  };
  settings.signal?.throwIfAborted();
  const connectTimeoutMs = await resolveHosts(backend, parsed, settings);
  const testing = await probes?.(backend);
  const driver = await backend.open({
    url: parsed,
    own: settings.own.get(backend),
    sessionTimeoutMs: settings.sessionTimeoutMs,
    connectTimeoutMs,
    signal: settings.signal,
    probe: testing?.probe,
  });
  const session = await sessionOver(driver, settings, sessionOptions);
  nameBackend(session, backend.title.toLowerCase());
  tellSessionState(session, session.state, undefined);
  testing?.opened(session);
  return session;
}

/**
 * A host name that does not exist fails at once rather than at the connect timeout; the dial gets
 * what is left of it. Without a lookup it gets the whole timeout, so its errors name the one asked for.
 */
async function resolveHosts(backend: Backend, url: ParsedUrl, settings: Settings): Promise<number> {
  if (!backend.resolvesHosts || namesToLookUp(url.hosts).length === 0) return settings.connectTimeoutMs;
  const deadline = performance.now() + settings.connectTimeoutMs;
  await refuseUnknownNames(backend.title, url.hosts, { deadline, signal: settings.signal });
  return Math.max(1, Math.ceil(deadline - performance.now()));
}

/**
 * A driver just opened becomes a session: closed again if the connect was given up meanwhile or the
 * margin is as long as the timeout the server granted.
 */
async function sessionOver(
  driver: Driver,
  settings: Settings,
  sessionOptions: ConstructorParameters<typeof BatonSession>[1],
): Promise<BatonSession> {
  await closeIfAborted(driver, settings.signal);
  await refuseMargin(settings.deadlineMarginMs, driver);
  return new BatonSession(driver, sessionOptions);
}

/** A connect given up on just as it succeeded: the session is closed (its entries and lease go with it). */
async function closeIfAborted(driver: Driver, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted !== true) return;
  await driver.close().catch(() => undefined); // the caller hears the abort, not how the close went
  throw signal.reason;
}

/** A margin as long as the session timeout the server granted would declare the session lost at once. */
async function refuseMargin(marginMs: number | undefined, driver: Driver): Promise<void> {
  if (marginMs === undefined || marginMs < driver.timeoutMs) return;
  await driver.close();
  throw new InvalidArgumentError(
    'deadlineMarginMs',
    marginMs,
    `less than the session timeout the server granted (${driver.timeoutMs} ms)`,
  );
}
