import { randomUUID } from 'node:crypto';

import {
  type CompareAndSetStore,
  type FencedRecord,
  fencedWrite,
  MemoryCasStore,
  StaleTokenError,
} from 'baton-locks/fence';
import { describe, expect, it } from 'vitest';

import { BackendError, InvalidArgumentError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { memoryFixture } from '../../harness/backends/memory.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';
import { shuffled, uniqueTokens } from './tokens.js';

const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.random() * 3));

/**
 * The in-memory store with a pause between every read and every conditional write, as a networked
 * store would have: concurrent writers then read the same version and race to write it.
 */
class RacingStore<V> implements CompareAndSetStore<V> {
  readonly inner = new MemoryCasStore<V>();
  /** Each accepted write's token and the mark it replaced, in the order the store applied them. */
  readonly applied: { token: bigint; before: bigint | undefined }[] = [];
  lost = 0;

  async read(key: string): Promise<FencedRecord<V> | undefined> {
    await pause();
    return this.inner.read(key);
  }

  async compareAndSet(key: string, version: string | undefined, next: { value: V; mark: bigint }): Promise<boolean> {
    await pause();
    const before = (await this.inner.read(key))?.mark;
    const written = await this.inner.compareAndSet(key, version, next);
    if (written) this.applied.push({ token: next.mark, before });
    else this.lost += 1;
    return written;
  }
}

describe('the compare-and-set fence (in-memory store)', () => {
  const scope = useScope(memoryFixture);

  it("refuses the late write of a holder whose session expired, after the next holder wrote; the record keeps the successor's value", async () => {
    const store = new MemoryCasStore<string>();
    const key = `ledger/${randomUUID().slice(0, 8)}`;
    const [expiring, other] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(expiring, 'settlement').acquire();
    const next = new FairMutex(other, 'settlement').acquire({ timeoutMs: 10_000 });
    await eventually('the waiter queued', async () => (await backendOf(other).list('settlement')).length === 2);
    await scope.fixture.expire(expiring);
    const successor = await next;
    try {
      await fencedWrite(store, key, successor.fencingToken, () => 'node-b');
      const late = await fencedWrite(store, key, held.fencingToken, () => 'node-a').catch((error: unknown) => error);
      expect(late).toBeInstanceOf(StaleTokenError);
      expect(late).toMatchObject({
        code: 'STALE_TOKEN',
        resource: key,
        token: held.fencingToken,
        mark: successor.fencingToken,
      });
      expect(await store.read(key)).toMatchObject({ value: 'node-b', mark: successor.fencingToken });
      expect(await fencedWrite(store, key, successor.fencingToken, (now) => `${now}+again`)).toBe('node-b+again');
    } finally {
      await successor.release();
    }
  });

  it('never moves a mark backwards under 60 concurrent writers racing on one record, tokens in random order', async () => {
    const store = new RacingStore<bigint[]>();
    const tokens = shuffled(uniqueTokens(60));
    const outcomes = await Promise.all(
      tokens.map((token) =>
        fencedWrite(store, 'register', token, (log = []) => [...log, token], { maxAttempts: 1_000 }).then(
          () => 'accepted' as const,
          (error: unknown) => {
            expect(error).toBeInstanceOf(StaleTokenError);
            expect((error as StaleTokenError).mark > token).toBe(true);
            return 'refused' as const;
          },
        ),
      ),
    );
    expect(store.lost, 'the writers did race').toBeGreaterThan(0);
    for (const { token, before } of store.applied) expect(before === undefined || token >= before).toBe(true);
    const highest = tokens.reduce((a, b) => (a > b ? a : b));
    const record = await store.read('register');
    expect(record?.mark).toBe(highest);
    expect(record?.value.length).toBe(outcomes.filter((outcome) => outcome === 'accepted').length);
    expect(record?.value.at(-1)).toBe(highest);
  });

  it('gives up with BackendError after maxAttempts lost races, rejects with the reason when aborted, and checks its arguments', async () => {
    const alwaysChanged: CompareAndSetStore<string> = {
      read: async () => ({ value: 'x', mark: 1n, version: randomUUID() }),
      compareAndSet: async () => false,
    };
    await expect(fencedWrite(alwaysChanged, 'k', 2n, () => 'y', { maxAttempts: 3 })).rejects.toBeInstanceOf(
      BackendError,
    );
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    await expect(
      fencedWrite(new MemoryCasStore<string>(), 'k', 1n, () => 'v', { signal: controller.signal }),
    ).rejects.toThrow('stopped');
    const store = new MemoryCasStore<string>();
    await expect(fencedWrite(store, 'k', 1n, () => 'v', { attempts: 2 } as never)).rejects.toThrow(/attempts/);
    await expect(fencedWrite(store, 'k', 1n, () => 'v', { maxAttempts: 0 })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(fencedWrite(store, '', 1n, () => 'v')).rejects.toThrow(/invalid resource/);
    await expect(fencedWrite(store, 'k', 2n ** 63n, () => 'v')).rejects.toThrow(/invalid fencing token/);
    expect([...store.entries()]).toEqual([]);
  });
});
