import type { Session } from '../recipes/contract.js';
import type { ConnectOptions } from '../src/connect.js';
import { connect } from '../src/testing.js';
import { sleep } from './clock.js';
import { cpuMs } from './cpu.js';
import { within } from './scale-queue.js';

/** What `n` idle sessions in one process cost, or why they could not all be opened. */
export interface SessionsOutcome {
  readonly n: number;
  openMs?: number;
  /** Requests per second per session while all idle, and the T/3 floor (three per session timeout). */
  perSessionPerSecond?: number;
  floorPerSessionPerSecond?: number;
  /** CPU of this process and of the server while idle, as a share of one core. */
  clientCpuShare?: number;
  serverCpuShare?: number | undefined;
  sessionsLost?: number;
  didNotFinish?: string;
}

/** Opens sessions 20 at a time; stops at the first failure. */
async function openSessions(url: string, options: ConnectOptions, n: number, into: Session[]): Promise<void> {
  for (let i = 0; i < n; i += 20)
    into.push(...(await Promise.all(Array.from({ length: Math.min(20, n - i) }, () => connect(url, options)))));
}

/** `n` sessions opened in one process, then left idle for `idleMs`: their requests and CPU. */
export async function idleSessions(
  url: string,
  options: ConnectOptions,
  n: number,
  idleMs: number,
  requests: () => Promise<number>,
  serverPid: number | undefined,
): Promise<SessionsOutcome> {
  const outcome: SessionsOutcome = { n };
  const sessions: Session[] = [];
  try {
    const started = performance.now();
    const opening = openSessions(url, options, n, sessions);
    if (!(await within(opening, 120_000))) {
      outcome.didNotFinish = `opening: ${sessions.length} of ${n} open after 120 s`;
      return outcome;
    }
    outcome.openMs = performance.now() - started;
    await sleep(2_000); // the opening's own requests settle
    const before = { requests: await requests(), client: process.cpuUsage(), server: cpuMs([serverPid]) };
    const idleStarted = performance.now();
    await sleep(idleMs);
    const seconds = (performance.now() - idleStarted) / 1000;
    const client = process.cpuUsage(before.client);
    outcome.perSessionPerSecond = ((await requests()) - before.requests) / n / seconds;
    outcome.floorPerSessionPerSecond = 3 / (sessions[0]!.timeoutMs / 1000);
    outcome.clientCpuShare = (client.user + client.system) / 1e6 / seconds;
    outcome.serverCpuShare =
      serverPid === undefined ? undefined : (cpuMs([serverPid]) - before.server) / 1000 / seconds;
    outcome.sessionsLost = sessions.filter((session) => session.signal.aborted).length;
    return outcome;
  } catch (error) {
    outcome.didNotFinish = `opening: ${sessions.length} of ${n} open, then ${(error as Error).name}: ${(error as Error).message}`;
    return outcome;
  } finally {
    for (let i = 0; i < sessions.length; i += 50)
      await within(Promise.all(sessions.slice(i, i + 50).map((session) => session.close())), 30_000);
  }
}
