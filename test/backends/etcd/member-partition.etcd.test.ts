import { connect } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SessionState } from '../../../recipes/contract.js';
import type { Session } from '../../../recipes/contract.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { etcdFixtureOf } from '../../harness/backends/etcd.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { type EtcdCluster, startEtcd } from '../../harness/servers/etcd.js';
import { eventually, later } from '../../harness/wait.js';

const TTL_SECONDS = 2;

/**
 * A member cut off from its peers while clients still reach it (its peers' traffic goes through
 * proxies: the one in front of it, and those of the others, which drop what it sends them). It has no
 * leader, keeps its watch streams open and never sends the events its peers commit. Its own cluster:
 * the shared one must not lose a member.
 */
describe('etcd: a member cut off from its peers while clients still reach it', () => {
  let cluster: EtcdCluster;
  beforeAll(async () => {
    cluster = await startEtcd({ size: 3, peerProxies: true });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  const scope = useScope(() =>
    etcdFixtureOf({ endpoints: cluster.endpoints, ttlSeconds: TTL_SECONDS }, 'etcd (3 members behind peer proxies)'),
  );

  /** Cuts member `index` off from its peers; returns the heal. */
  async function cutOff(index: number): Promise<() => Promise<void>> {
    const member = cluster.members[index]!;
    const from = Buffer.from(`X-Server-From: ${await cluster.memberId(member)}\r\n`);
    const own = cluster.peerProxies[index]!;
    const others = cluster.peerProxies.filter((proxy) => proxy !== own);
    own.blackhole();
    for (const proxy of others) proxy.isolate((first) => first.includes(from));
    await eventually(
      `${member.name} has no leader`,
      async () => (await cluster.leaderSeenBy(member)) === '0',
      TTL_SECONDS * 5_000,
    );
    return async () => {
      own.drop();
      own.restore();
      for (const proxy of others) proxy.heal();
      await eventually(
        `${member.name} follows a leader again`,
        async () => (await cluster.leaderSeenBy(member)) !== '0',
        TTL_SECONDS * 5_000,
      );
    };
  }

  it('waiters whose watches may sit on it are granted in order after a release, and no session is lost', async () => {
    const ttlMs = TTL_SECONDS * 1000;
    const leader = await cluster.leader();
    expect(leader).toBeDefined();
    // A follower: cutting the leader off would also make the test wait for an election.
    const index = cluster.members.findIndex((member) => member !== leader);
    const hosts = (members: readonly number[]): string =>
      members.map((i) => cluster.endpoints[i]!.replace('http://', '')).join(',');
    const elsewhere = [0, 1, 2].filter((i) => i !== index);
    const sessions: Session[] = [];
    const states: SessionState[][] = [];
    const open = async (members: readonly number[]): Promise<Session> => {
      const session = await connect(`etcd://${hosts(members)}/${scope.namespace}`, { ttlSeconds: TTL_SECONDS });
      const seen: SessionState[] = [];
      session.on('state', (state) => seen.push(state));
      sessions.push(session);
      states.push(seen);
      return session;
    };
    let heal: (() => Promise<void>) | undefined;
    try {
      const holding = await open(elsewhere);
      const holder = await new FairMutex(holding, 'queue').acquire();
      const order: number[] = [];
      /** When each lock was let go of (the holder's first), and when each waiter was granted. */
      const released: number[] = [];
      const granted: number[] = [];
      const waits: Promise<void>[] = [];
      const waiters = 9;
      for (let i = 1; i <= waiters; i += 1) {
        // Every member, the cut-off one too: a waiter's watch stream is on it one time in three.
        const session = await open([0, 1, 2]);
        waits.push(
          later(
            new FairMutex(session, 'queue').acquire({ timeoutMs: 10 * ttlMs }).then(async (lock) => {
              granted.push(performance.now());
              order.push(i);
              await lock.release();
              released.push(performance.now());
            }),
          ),
        );
        await eventually(
          `waiter ${i} queued`,
          async () => (await backendOf(holding).list('queue')).length === i + 1,
          2 * ttlMs,
        );
      }
      heal = await cutOff(index);
      released.push(performance.now());
      await holder.release();
      await Promise.all(waits);
      expect(order).toEqual(Array.from({ length: waiters }, (_, i) => i + 1));
      // Each waiter is granted within a bound after the lock is let go of: its watch may sit on the
      // member cut off, and the periodic look (every keepalive interval, a quarter of the TTL) reads
      // the queue, at worst first from the member cut off (an attempt runs out after a third of the TTL,
      // and that member is tried last from then on) and then from one that has a leader: well within a TTL.
      const handoffs = granted.map((at, i) => at - released[i]!);
      console.info(
        `etcd member cut off: handoffs ${handoffs.map((ms) => ms.toFixed(0)).join(', ')} ms (TTL ${ttlMs} ms)`,
      );
      expect(
        handoffs.filter((ms) => ms > ttlMs),
        'handoffs slower than one TTL',
      ).toEqual([]);
      expect(states.filter((seen) => seen.includes('lost'))).toEqual([]);
    } finally {
      await heal?.();
      await Promise.allSettled(sessions.map((session) => session.close()));
    }
  }, 120_000);
});
