import { describe, expect, it } from 'vitest';

import type { Entry } from '../../recipes/contract.js';
import { BackendError } from '../../recipes/errors.js';
import { LIST_BEFORE_CALL, ListBefore } from '../../src/backends/mysql/list-before.js';
import { mysqlCounters } from '../../src/backends/mysql/probe.js';
import { SqlEntry } from '../../src/backends/sql/entry.js';

const entry = (n: number, kind = 'exclusive'): Entry => new SqlEntry('q', `s1.${n}`, kind, BigInt(n), BigInt(n));

/** A row as `baton_list_before` sends it. */
const row = (n: number, self = false, live = true): Record<string, unknown> => ({
  token: String(n),
  key: `s1.${n}`,
  queue_position: String(n),
  kind: 'exclusive',
  live: live ? 1 : 0,
  is_self: self ? 1 : 0,
});

/** A short read over canned answers: each call takes the next one (rows, or an error to throw). */
function reader(answers: (Record<string, unknown>[] | Error)[], listing: Entry[]) {
  const calls: unknown[][] = [];
  let listings = 0;
  const ahead = new ListBefore({
    namespace: 'ns',
    counters: mysqlCounters(),
    call: <R>(text: string, values: readonly unknown[]): Promise<R[]> => {
      expect(text).toBe(LIST_BEFORE_CALL);
      calls.push([...values]);
      const answer = answers.shift()!;
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer as R[]);
    },
    list: () => {
      listings += 1;
      return Promise.resolve(listing);
    },
    sweepOrphans: (entries) => entries,
  });
  return { ahead, calls, listings: () => listings };
}

const missing = (): BackendError =>
  new BackendError('MySQL request failed', {
    cause: Object.assign(new Error('PROCEDURE baton_list_before does not exist'), { errno: 1305, sqlState: '42000' }),
  });

describe('MySQL: the short read at a wake (ListBefore)', () => {
  it('answers from one call: self present, the entries ahead nearest first, more when the window was full', async () => {
    const { ahead, calls, listings } = reader([[row(9, true), row(7), row(5)]], []);
    const read = await ahead.read('q', entry(9), 1);
    expect(read.present).toBe(true);
    expect(read.entries.map((e) => e.key)).toEqual(['s1.7']);
    expect(read.more).toBe(true);
    expect(calls).toEqual([['ns', 'q', 's1.9', 1]]);
    expect(listings()).toBe(0);
  });

  it('says self is gone when its row is not sent, and sends no limit for every entry ahead', async () => {
    const { ahead, calls } = reader([[], [row(9, true), row(7), row(5)]], []);
    expect(await ahead.read('q', entry(9), 1)).toEqual({ present: false, entries: [], more: false });
    const all = await ahead.read('q', entry(9));
    expect(all.entries.map((e) => e.key)).toEqual(['s1.7', 's1.5']);
    expect(all.more).toBe(false);
    expect(calls[1]).toEqual(['ns', 'q', 's1.9', null]);
  });

  it('lists the queue whole when a row ahead expired after the sweep', async () => {
    const { ahead, listings } = reader([[row(9, true), row(7, false, false)]], [entry(3), entry(5), entry(9)]);
    const read = await ahead.read('q', entry(9), 1);
    expect(listings()).toBe(1);
    expect(read).toMatchObject({ present: true, entries: [{ key: 's1.5' }], more: true });
  });

  it('falls back to the whole listing for good once the procedure is missing; other failures are thrown', async () => {
    const { ahead, calls, listings } = reader([missing()], [entry(5), entry(9)]);
    expect(await ahead.read('q', entry(9), 1)).toMatchObject({
      present: true,
      entries: [{ key: 's1.5' }],
      more: false,
    });
    expect(await ahead.read('q', entry(5), 1)).toEqual({ present: true, entries: [], more: false });
    expect(calls).toHaveLength(1);
    expect(listings()).toBe(2);
    const failing = reader([new BackendError('MySQL request failed', { cause: new Error('other') })], []);
    await expect(failing.ahead.read('q', entry(9), 1)).rejects.toThrow('MySQL request failed');
    expect(failing.listings()).toBe(0);
  });
});
