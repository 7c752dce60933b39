import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

import { BackendError } from '../../recipes/errors.js';

/** Socket and resolver error codes, in the words a connect error uses for them. */
const WHAT_HAPPENED: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EHOSTDOWN: 'host down',
  ENETDOWN: 'network down',
  EADDRNOTAVAIL: 'address not available',
  ETIMEDOUT: 'timed out',
  ECONNRESET: 'connection reset by the server',
  EPIPE: 'connection closed by the server',
  ENOTFOUND: 'name not found',
  EAI_AGAIN: 'name lookup failed (temporary resolver failure)',
  EAI_FAIL: 'name lookup failed',
};
const CODE = new RegExp(`\\b(${Object.keys(WHAT_HAPPENED).join('|')})\\b`);

/**
 * What a failed dial ran into, in words: "connection refused (connect ECONNREFUSED 127.0.0.1:1)".
 * Reads the error's code, or the code named in its message (gRPC puts the socket's error there).
 * An error with neither (or none at all) is a server that never answered.
 */
export function describeDialFailure(error: unknown, waitedMs: number): string {
  const code = dialErrorCode(error);
  const message = error instanceof Error ? error.message : undefined;
  if (code !== undefined) return `${WHAT_HAPPENED[code]!} (${message ?? code})`;
  // gRPC's resolver reports a failed lookup without the resolver's code.
  if (message !== undefined && /name resolution failed/i.test(message)) return `name lookup failed (${message})`;
  return `timed out: no answer within ${waitedMs} ms${message === undefined ? '' : ` (${message})`}`;
}

/** The socket or resolver error code an error carries, if it is one of those a dial can end with. */
export function dialErrorCode(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code in WHAT_HAPPENED) return code;
  return CODE.exec(error.message)?.[1];
}

export interface LookupLimits {
  /** `performance.now()` at which the connect gives up. */
  readonly deadline: number;
  readonly signal?: AbortSignal | undefined;
}

/**
 * The host names of a URL that `refuseUnknownNames` looks up: none when any host is an IP address,
 * since that one can always be dialed.
 */
export function namesToLookUp(hosts: readonly string[]): string[] {
  const all = new Set(hosts.map(hostOf));
  const names = [...all].filter((host) => isIP(host) === 0);
  return names.length < all.size ? [] : names;
}

/**
 * Looks up every host name of a URL once, with the system's resolver (hosts file, DNS, whatever it
 * is configured with), before any client is made. When the resolver says that none of them exists,
 * the connect fails at once with that, instead of the client asking again and again until its
 * connect timeout (a lookup in flight cannot be cancelled in Node and would keep the process alive
 * after the connect rejected). Names that resolve, a temporary resolver failure and IP addresses go
 * on to the client as given: it looks names up again on every reconnect, as servers may move.
 */
export async function refuseUnknownNames(
  server: string,
  hosts: readonly string[],
  limits: LookupLimits,
): Promise<void> {
  const names = namesToLookUp(hosts);
  if (names.length === 0) return;
  const where = `could not connect to ${server} at ${hosts.join(',')}`;
  const outcomes = await Promise.all(names.map((name) => lookupWithin(name, limits, where)));
  const unknown = outcomes.filter(
    (outcome): outcome is Error => outcome instanceof Error && dialErrorCode(outcome) === 'ENOTFOUND',
  );
  if (unknown.length < names.length) return;
  const what =
    names.length === 1 ? `the name ${names[0]!} was not found` : `none of the names ${names.join(', ')} was found`;
  throw new BackendError(`${where}: ${what} (${unknown[0]!.message})`, { cause: unknown[0] });
}

/** Resolves with the lookup's error (or nothing); throws when the connect's time or signal ends first. */
async function lookupWithin(
  name: string,
  { deadline, signal }: LookupLimits,
  where: string,
): Promise<Error | undefined> {
  signal?.throwIfAborted();
  const waitMs = Math.max(0, deadline - performance.now());
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const givenUp = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new BackendError(
            `${where}: timed out looking up the name ${name} (no answer from the resolver within ${Math.round(waitMs)} ms)`,
          ),
        ),
      waitMs,
    );
    onAbort = () => reject(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([
      lookup(name, { all: true }).then(
        () => undefined,
        (error: Error) => error,
      ),
      givenUp,
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  }
}

/** `host` of `host:port`, without an IPv6 address's brackets. */
function hostOf(hostPort: string): string {
  const host = hostPort.slice(0, hostPort.lastIndexOf(':'));
  return host.startsWith('[') ? host.slice(1, -1) : host;
}
