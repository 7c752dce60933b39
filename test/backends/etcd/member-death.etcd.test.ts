import { connect } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { backendOf } from '../../harness/internals.js';
import { type EtcdCluster, startEtcd } from '../../harness/servers/etcd.js';
import { eventually, later } from '../../harness/wait.js';

/** Its own cluster: killing a member must not disturb the suites that share the global one. */
describe('FairMutex on a 3-node etcd cluster when a member dies', () => {
  let cluster: EtcdCluster;
  const sessions: Session[] = [];
  beforeAll(async () => {
    cluster = await startEtcd({ size: 3 });
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled(sessions.map((session) => session.close()));
    await cluster.stop();
  });

  it('grants waiters in order after the leader is killed and restarted', async () => {
    const url = `etcd://${cluster.endpoints.map((e) => e.replace('http://', '')).join(',')}/member-kill`;
    for (let i = 0; i < 4; i += 1) sessions.push(await connect(url, { ttlSeconds: 5 }));
    const holder = await new FairMutex(sessions[0]!, 'ordered').acquire();
    const order: number[] = [];
    const waits: Promise<void>[] = [];
    for (let i = 1; i < 4; i += 1) {
      waits.push(
        later(
          new FairMutex(sessions[i]!, 'ordered').acquire({ timeoutMs: 30_000 }).then(async (lock) => {
            order.push(i);
            await lock.release();
          }),
        ),
      );
      await eventually(
        `waiter ${i} queued`,
        async () => (await backendOf(sessions[0]!).list('ordered')).length === i + 1,
      );
    }
    const leader = await cluster.leader();
    expect(leader).toBeDefined();
    await leader!.kill();
    await holder.release();
    await Promise.all(waits);
    expect(order).toEqual([1, 2, 3]);
    await leader!.start();
    const again = await new FairMutex(sessions[1]!, 'ordered').acquire({ timeoutMs: 10_000 });
    expect(again.fencingToken > holder.fencingToken).toBe(true);
    await again.release();
    expect(await backendOf(sessions[0]!).list('ordered')).toEqual([]);
    expect(sessions.every((session) => session.state !== 'lost')).toBe(true);
  }, 60_000);
});
