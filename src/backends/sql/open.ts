import { BackendError, BatonError } from '../../../recipes/errors.js';
import { describeDialFailure, dialErrorCode } from '../dial.js';

/** How long one statement may go unanswered before its connection is dropped and it is sent again. */
export function attemptMs(sessionTimeoutMs: number): number {
  return Math.max(Math.floor(sessionTimeoutMs / 3), 500);
}

/** A connection that opening a session makes and, on failure, closes again. */
export interface Connectable {
  open(): Promise<void>;
  close(): Promise<void>;
  destroy(): void;
  readonly closed: boolean;
}

/** A SQL server as a connect meets it: where it is, and how its errors read. */
export interface ServerAt {
  /** The backend's name in messages (`PostgreSQL`, `MySQL`). */
  readonly title: string;
  /** The URL as it may be shown (no password). */
  readonly shown: string;
  readonly connectTimeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  /** Whether the error is the server's own answer (a SQLSTATE, an error number), not the network's. */
  answered(error: unknown): boolean;
  /** The server's answer in the recipes' terms (the backend's failure map). */
  mapFailure(error: unknown): Error;
  /** A refused login, as the error to throw at once; undefined for any other failure. */
  refusedLogin(error: unknown): Error | undefined;
  /** Whether the server's answer says to try again soon (starting up, too many connections). */
  asksToRetry(error: unknown): boolean;
}

/** The steps of opening a session between its first connection and its second. */
export interface SessionSteps<P> {
  /** The requests' connection, made first. */
  readonly main: Connectable;
  /** The session's other connection (the listening one, the heartbeat's), made once its row exists. */
  readonly second: Connectable;
  /** On the first connection: the server's checks and baton's schema. */
  prepare(): Promise<P>;
  /** Opens the session's row: its id. */
  openRow(): Promise<string>;
  /** Deletes the session's row again (the second connection failed). */
  dropRow(session: string): Promise<unknown>;
}

/**
 * Connects the session's two connections, prepares the server, and opens the session's row. Anything
 * made is closed again on failure, and an abort of `server.signal` destroys both connections at once.
 */
export async function openLeaseSession<P>(
  server: ServerAt,
  steps: SessionSteps<P>,
): Promise<{ prepared: P; session: string; openedAt: number }> {
  const { main, second } = steps;
  const { signal } = server;
  const onAbort = (): void => {
    main.destroy();
    second.destroy();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await connectFirst(main, server);
    const prepared = await steps.prepare();
    const openedAt = performance.now();
    const session = await steps.openRow();
    try {
      await second.open();
    } catch (error) {
      await steps.dropRow(session).catch(() => undefined);
      throw error;
    }
    return { prepared, session, openedAt };
  } catch (error) {
    main.destroy();
    second.destroy();
    signal?.throwIfAborted();
    if (error instanceof BatonError) throw error;
    if (server.answered(error)) throw server.mapFailure(error);
    throw new BackendError(
      `${server.title} at ${server.shown} failed while the session was opened: ${dialFailure(error, server.connectTimeoutMs)}`,
      { cause: error },
    );
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The first connection, tried again (a server restarting, or refusing while it starts up) until the
 * connect timeout; a refused login or another answer of the server's ends it at once.
 */
async function connectFirst(main: Connectable, server: ServerAt): Promise<void> {
  const giveUpAt = performance.now() + server.connectTimeoutMs;
  for (let attempt = 0; ; attempt += 1) {
    try {
      await main.open();
      return;
    } catch (error) {
      const refused = server.refusedLogin(error);
      if (refused !== undefined) throw refused;
      // A name that does not exist will not come to exist within the timeout: no point in waiting.
      const final = dialErrorCode(error) === 'ENOTFOUND' || dialErrorCode(error) === 'EAI_FAIL';
      const again = !final && (!server.answered(error) || server.asksToRetry(error));
      const pause = Math.min(50 * 2 ** attempt, 1_000);
      if (!again || server.signal?.aborted === true || main.closed || performance.now() + pause >= giveUpAt) {
        if (server.answered(error) && !again && !final) throw error;
        const within = final ? '' : ` within ${server.connectTimeoutMs} ms`;
        throw new BackendError(
          `could not connect to ${server.title} at ${server.shown}${within}: ${dialFailure(error, server.connectTimeoutMs)}`,
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/**
 * `baton schema <url>` on one connection made for it: `apply` creates baton's tables (as `connect()`
 * would) and says whether they were there already; the connection is closed afterwards.
 */
export async function applySchemaOn(
  link: Connectable,
  server: Omit<ServerAt, 'refusedLogin' | 'asksToRetry' | 'signal'>,
  apply: () => Promise<'created' | 'present'>,
): Promise<'created' | 'present'> {
  try {
    try {
      await link.open();
    } catch (error) {
      throw new BackendError(
        `could not connect to ${server.title} at ${server.shown}: ${dialFailure(error, server.connectTimeoutMs)}`,
        { cause: error },
      );
    }
    return await apply();
  } catch (error) {
    if (error instanceof BatonError || !server.answered(error)) throw error;
    throw server.mapFailure(error);
  } finally {
    await link.close();
  }
}

/** A failed dial in words: a socket's error by its code, anything else by its message. */
function dialFailure(error: unknown, waitedMs: number): string {
  if (dialErrorCode(error) !== undefined || !(error instanceof Error)) return describeDialFailure(error, waitedMs);
  return error.message;
}
