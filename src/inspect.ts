import type { Entry } from '../recipes/contract.js';
import type { Session } from '../recipes/contract.js';
import { deadline } from '../recipes/deadline.js';
import { type Participant, participantsOf } from '../recipes/participants.js';
import { validateName } from '../recipes/validate.js';
import { connect, type ConnectOptions } from './connect.js';
import type { EntryInfo } from './driver-port.js';
import { internalsOf } from './session.js';

/**
 * One entry of a queue as `baton inspect` shows it: a `Participant` under the command's own field names,
 * with the fencing token as a decimal string (JSON has no 64-bit integers).
 */
export type EntryView = Omit<Participant, 'sessionId' | 'fencingToken' | 'id'> & {
  readonly session: string;
  readonly fencingToken: string;
  /** An election candidate's id; `''` for locks. */
  readonly data: string;
};

export interface QueueView {
  readonly name: string;
  readonly at: string;
  readonly entries: readonly EntryView[];
}

/** Holders and waiters of one queue, in order, from what the server says. */
export async function inspectQueue(session: Session, name: string): Promise<QueueView> {
  return (await look(session, validateName(name))).view;
}

/** The view, and the entries it was made from (what a watch for the next change compares against). */
async function look(session: Session, name: string): Promise<{ view: QueueView; entries: Entry[] }> {
  const infos = await internalsOf(session).describe(name);
  const now = Date.now();
  return {
    view: { name, at: new Date(now).toISOString(), entries: viewEntries(infos, now) },
    entries: infos.map((info) => info.entry),
  };
}

function viewEntries(infos: readonly EntryInfo[], now: number): EntryView[] {
  // JSON has no 64-bit integers, and the command's field names predate participants().
  return participantsOf(infos, now).map(
    ({ client, sessionId, ageMs, expiresInMs, fencingToken, id, key, ...head }) => ({
      ...head,
      client,
      session: sessionId,
      ageMs,
      expiresInMs,
      fencingToken: fencingToken.toString(),
      data: id,
      key,
    }),
  );
}

/** The queue as a table for people. */
export function formatQueue(view: QueueView): string {
  if (view.entries.length === 0) return `${view.name}: free (no holder, no waiter) at ${view.at}\n`;
  const holders = view.entries.filter((entry) => entry.role === 'holder').length;
  const permits = view.entries.find((entry) => entry.permits !== undefined)?.permits;
  const held = view.entries.reduce((sum, entry) => sum + (entry.role === 'holder' ? (entry.count ?? 0) : 0), 0);
  const header = ['#', 'role', 'kind', 'client', 'session', 'age', 'lease left', 'fencing token', 'id'];
  const rows = view.entries.map((entry) => [
    String(entry.position),
    entry.role,
    entry.count === undefined ? entry.kind : `${entry.kind} ${entry.count}/${entry.permits}`,
    entry.client,
    entry.session,
    duration(entry.ageMs),
    duration(entry.expiresInMs),
    entry.fencingToken,
    entry.data,
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: readonly string[]): string =>
    `${cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd()}\n`;
  const taken = permits === undefined ? '' : ` (${held} of ${permits} permits)`;
  const summary = `${view.name}: ${holders} holder${holders === 1 ? '' : 's'}${taken}, ${view.entries.length - holders} waiting, at ${view.at}\n`;
  return summary + line(header) + rows.map(line).join('');
}

function duration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min`;
}

export interface InspectOptions {
  readonly url: string;
  readonly name: string;
  readonly json: boolean;
  /** Print again at every change of the queue until `signal` aborts. */
  readonly watch: boolean;
  readonly connectTimeoutMs: number;
  /** Credentials and the like, passed to `connect` (the CLI reads them from the environment). */
  readonly connect?: ConnectOptions;
  readonly write: (text: string) => void;
  readonly signal?: AbortSignal;
}

/** `baton inspect`: the name is checked before any connection is made. */
export async function runInspect(options: InspectOptions): Promise<void> {
  const name = validateName(options.name);
  const session = await connect(options.url, { ...options.connect, connectTimeoutMs: options.connectTimeoutMs });
  const print = (view: QueueView): void =>
    options.write(options.json ? `${JSON.stringify(view)}\n` : formatQueue(view));
  try {
    for (;;) {
      const { view, entries } = await look(session, name);
      print(view);
      if (!options.watch) return;
      const stop = deadline(`watch of "${name}"`, undefined, [options.signal, session.signal]);
      try {
        await internalsOf(session).backend.waitChange(name, entries, stop.signal);
      } catch (error) {
        if (options.signal?.aborted) return; // the operator stopped watching
        throw error;
      } finally {
        stop.dispose();
      }
      if (!options.json) options.write('\n');
    }
  } finally {
    await session.close();
  }
}
