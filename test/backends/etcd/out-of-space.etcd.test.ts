import { connect } from 'baton-locks/testing';
import type { Etcd3 } from 'etcd3';
import { describe, expect, it } from 'vitest';

import { BackendError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { useOwnEtcd } from '../../harness/backends/etcd.js';
import { backendOf, entryOf } from '../../harness/internals.js';

const TTL_SECONDS = 2;

/** Raises or clears etcd's NOSPACE alarm on every member, as a full backend raises it. */
async function nospace(admin: Etcd3, action: 'Activate' | 'Deactivate'): Promise<void> {
  await admin.maintenance.alarm({ action, memberID: 0, alarm: 'Nospace' });
}

// An etcd of its own: the alarm stops every write to the server.
describe('etcd: out of space (the NOSPACE alarm raised)', () => {
  const { scope, admin } = useOwnEtcd(TTL_SECONDS);

  it('acquire and tryAcquire fail at once with a BackendError saying so, the holder still releases, and all works again once the alarm is cleared', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'job').acquire();
    await nospace(admin(), 'Activate');
    try {
      // Without a limit of their own: before, both were retried for as long as the alarm stood.
      const refused = await new FairMutex(b, 'job').acquire().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(BackendError);
      expect((refused as Error).message).toMatch(/out of space.*NOSPACE/);
      await expect(new FairMutex(b, 'job').tryAcquire()).rejects.toBeInstanceOf(BackendError);
      // A new session needs a lease, which etcd refuses too: said so, not a connect timeout.
      const opening = await connect(scope.fixture.url(scope.namespace), {
        ...scope.fixture.options,
        connectTimeoutMs: 60_000,
      }).then(
        async (session) => {
          await session.close();
          return undefined;
        },
        (error: unknown) => error,
      );
      expect((opening as Error).message).toMatch(/out of space/);
      // Deletes are still accepted: the holder releases, and nothing is left in the queue.
      await held.release();
      expect(await backendOf(b).list('job')).toEqual([]);
      expect(a.state).toBe('connected');
      expect(b.state).toBe('connected');
    } finally {
      await nospace(admin(), 'Deactivate');
    }
    // The refused attempts wrote nothing, and took no slot for good: b's next entry takes the first one.
    const lock = await new FairMutex(b, 'job').acquire({ timeoutMs: 10_000 });
    expect(entryOf(lock).key.endsWith('-0-lock')).toBe(true);
    await lock.release();
  });
});
