import { afterEach, describe, expect, it } from 'vitest';

import { LockLostError } from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { redisFixture } from '../harness/backends/redis.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { entryOf } from '../harness/internals.js';
import { killAllBatons, runToEnd } from './spawn-baton.js';

afterEach(killAllBatons);

function releaseCommandSuite(getFixture: () => Fixture): void {
  describe(`baton release on ${getFixture().name}`, { timeout: 60_000 }, () => {
    const scope = useScope(getFixture);
    const release = (...args: string[]): string[] => ['release', scope.fixture.url(scope.namespace), ...args];

    it('removes the entry (exit 0): the holder learns it was revoked, the waiter is granted; again, exit 66', async () => {
      const held = await new FairMutex(await scope.open(), 'jobs').acquire();
      const next = new FairMutex(await scope.open(), 'jobs').acquire({ timeoutMs: 30_000 });
      const key = entryOf(held).key;
      const removed = await runToEnd(release('jobs', '--entry', key));
      expect(removed.code).toBe(0);
      expect(removed.stdout).toContain(`removed ${key}`);
      const granted = await next;
      await new Promise<void>((resolve) => {
        if (held.signal.aborted) resolve();
        held.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(held.signal.reason).toMatchObject({ reason: 'revoked' });
      const again = await runToEnd(release('jobs', '--entry', key));
      expect(again.code).toBe(66);
      expect(again.stderr).toContain('nothing was removed');
      await granted.release();
    });

    it('refuses bad usage with exit 64', async () => {
      expect((await runToEnd(release('a//b', '--entry', 'k'))).code).toBe(64);
      expect((await runToEnd(release('jobs'))).code).toBe(64);
    });
  });
}

releaseCommandSuite(() => zkFixture('zkStandalone'));
releaseCommandSuite(() => redisFixture());
