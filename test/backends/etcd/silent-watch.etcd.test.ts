import { etcdProbeOf } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { LeaderElection } from '../../../recipes/election.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';

function silenced(session: Session): Session {
  etcdProbeOf(session).muteWatchEvents = true;
  return session;
}

// A watch can stay silent while its stream stays open (a member cut off from its peers never sends the
// delete; etcd3 watchers go quiet). Here every watch event of one session is ignored, and its waits
// must still end, through the session's own periodic look at what it watches.
describe('etcd: waits whose watch stays silent', () => {
  const scope = useScope(() => etcdFixture('etcdStandalone'));
  const info = inject('etcdStandalone');
  // A look every quarter of the TTL: a TTL is ample.
  const withinMs = (): number => info.ttlSeconds * 1_000;

  it('a waiter is still granted once the holder releases', async () => {
    const holder = await scope.open();
    const deaf = silenced(await scope.open());
    const held = await new FairMutex(holder, 'q').acquire();
    const waiting = new FairMutex(deaf, 'q').acquire({ timeoutMs: withinMs() * 3 });
    await eventually('the waiter queued', async () => (await backendOf(holder).list('q')).length === 2, withinMs());
    await held.release();
    // Without a look of its own, the deaf waiter would time out.
    const lock = await waiting;
    expect(lock.held).toBe(true);
    await lock.release();
  });

  it('an observer still sees the leader change', async () => {
    const deaf = silenced(await scope.open());
    const candidate = await scope.open();
    const stop = new AbortController();
    const observer = new LeaderElection(deaf, 'e', { id: 'o' }).observe({ signal: stop.signal });
    expect((await observer.next()).value).toBeNull();
    const next = observer.next();
    const leading = await new LeaderElection(candidate, 'e', { id: 'c' }).campaign();
    const seen = await Promise.race([
      next,
      new Promise((resolve) => setTimeout(() => resolve('nothing seen'), withinMs() * 2)),
    ]);
    expect(seen).toEqual({ done: false, value: { id: 'c', fencingToken: leading.fencingToken } });
    await leading.resign();
    stop.abort(new Error('done'));
    await expect(observer.next()).rejects.toThrow('done');
  });
});
