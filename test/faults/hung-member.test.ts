import { setTimeout as sleep } from 'node:timers/promises';

import { connect, etcdProbeOf, type EtcdView } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import type { SessionState } from '../../recipes/contract.js';
import type { Session } from '../../recipes/contract.js';
import { FairMutex } from '../../recipes/mutex.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { backendOf, entryOf } from '../harness/internals.js';
import { TcpProxy } from '../harness/servers/proxy.js';
import { eventually, later } from '../harness/wait.js';

/**
 * A member that stops answering without closing the connection (a long GC pause, a stalled disk). The
 * ZooKeeper client never notices on its own; baton drops the silent connection so that the client
 * moves to a live member while the session can still be saved there.
 */
describe('a hung member of a ZooKeeper ensemble', () => {
  const scope = useScope(() => zkFixture('zkEnsemble'));

  /** A session reaching the ensemble through a proxy per member; `use` runs on it, then all is closed. */
  async function throughProxies(use: (session: Session, proxies: TcpProxy[]) => Promise<void>): Promise<void> {
    const info = inject('zkEnsemble');
    const proxies = await Promise.all(info.ports.map((port) => TcpProxy.start({ port })));
    const session = await connect(`zk://${proxies.map((proxy) => proxy.address).join(',')}/${scope.namespace}`, {
      sessionTimeoutMs: info.sessionTimeoutMs,
    });
    try {
      await use(session, proxies);
    } finally {
      await session.close();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  }

  /** Blackholes the member `session` is connected to; resolves once it moved to another one, never lost. */
  async function hangItsMember(session: Session, proxies: TcpProxy[]): Promise<void> {
    const states: string[] = [];
    session.on('state', (state) => states.push(state));
    const hung = proxies.find((proxy) => proxy.connections > 0)!;
    hung.blackhole();
    await eventually(
      'moved to another member',
      () => states.includes('suspended') && session.state === 'connected',
      inject('zkEnsemble').sessionTimeoutMs * 2,
    );
    expect(states).not.toContain('lost');
    expect(proxies.filter((proxy) => proxy !== hung && proxy.connections > 0)).toHaveLength(1);
  }

  it('the session moves to another member before its deadline, and the holder keeps its lock', async () => {
    await throughProxies(async (session, proxies) => {
      const held = await new FairMutex(session, 'hung').acquire();
      await hangItsMember(session, proxies);
      expect(held.held).toBe(true);
      expect(await backendOf(session).confirm(entryOf(held))).toBe(true);
      await held.release();
    });
  });

  // An idle session heartbeats at the slower idle pace, so it notices the silence later than a holder.
  it('an idle session (holding and waiting for nothing) moves too, and then takes a lock', async () => {
    await throughProxies(async (session, proxies) => {
      const warmUp = await new FairMutex(session, 'hung').acquire();
      await warmUp.release();
      await hangItsMember(session, proxies);
      const held = await new FairMutex(session, 'hung').acquire({ timeoutMs: inject('zkEnsemble').sessionTimeoutMs });
      await held.release();
    });
  });
});

/**
 * The same on etcd: one member of the cluster stops answering this process (its connections stay open,
 * nothing comes back) while its peers still hear it. Every session reaches the members through proxies,
 * one of which is then blackholed.
 */
describe('a hung member of an etcd cluster', () => {
  const scope = useScope(() => etcdFixture('etcdCluster'));

  /**
   * `count` sessions reaching every member through its own proxy. Their lease is twice the fixture's, so
   * that a loaded machine has room between a renewal sent elsewhere and the suspension these tests say
   * must not come.
   */
  async function sessionsThroughProxies(count: number): Promise<{
    sessions: Session[];
    proxies: TcpProxy[];
    states: SessionState[][];
    ttlMs: number;
    close(): Promise<void>;
  }> {
    const info = inject('etcdCluster');
    const ttlSeconds = 2 * info.ttlSeconds;
    const proxies = await Promise.all(
      info.endpoints.map((endpoint) => TcpProxy.start({ port: Number(new URL(endpoint).port) })),
    );
    const sessions: Session[] = [];
    const states: SessionState[][] = [];
    const close = async (): Promise<void> => {
      await Promise.allSettled(sessions.map((session) => session.close()));
      await Promise.all(proxies.map((proxy) => proxy.close()));
    };
    try {
      for (let i = 0; i < count; i += 1) {
        const session = await connect(`etcd://${proxies.map((proxy) => proxy.address).join(',')}/${scope.namespace}`, {
          ttlSeconds,
        });
        const seen: SessionState[] = [];
        session.on('state', (state) => seen.push(state));
        sessions.push(session);
        states.push(seen);
      }
    } catch (error) {
      await close();
      throw error;
    }
    return { sessions, proxies, states, ttlMs: ttlSeconds * 1000, close };
  }

  const driver = (session: Session): EtcdView => etcdProbeOf(session).view;
  const keepAlivesOn = (proxy: TcpProxy, sessions: readonly Session[]): number =>
    sessions.filter((session) => driver(session).keepAliveMember === proxy.address).length;
  /** The proxy of the member that carries the most sessions' keepalive streams. */
  const busiest = (proxies: readonly TcpProxy[], sessions: readonly Session[]): TcpProxy =>
    proxies.reduce((most, proxy) => (keepAlivesOn(proxy, sessions) > keepAlivesOn(most, sessions) ? proxy : most));

  it('sessions renewing through the hung member move to another one and keep their leases and locks', async () => {
    const { sessions, proxies, states, ttlMs, close } = await sessionsThroughProxies(9);
    try {
      expect(sessions.every((session) => driver(session).prefersLiveMembers)).toBe(true);
      const holds = await Promise.all(sessions.map((session, i) => new FairMutex(session, `hung-${i}`).acquire()));
      await eventually(
        'every keepalive stream dialled',
        () => sessions.every((session) => driver(session).keepAliveMember !== undefined),
        ttlMs,
      );
      // The member with the most keepalive streams on it: at least a third of the sessions.
      const hung = busiest(proxies, sessions);
      expect(keepAlivesOn(hung, sessions)).toBeGreaterThanOrEqual(3);
      hung.blackhole();
      // A renewal unanswered for half a keepalive interval is sent again through another member.
      await eventually(
        'every keepalive moved off the hung member',
        () =>
          sessions.every((session) => {
            const member = driver(session).keepAliveMember;
            return member !== undefined && member !== hung.address;
          }),
        ttlMs,
      );
      // Two more lease times with the member still hung: no session may lose its lease meanwhile, nor
      // even be suspended (with onSuspend: 'abort' that would cost its holds): the renewal that went
      // unanswered was answered through another member within the keepalive interval.
      await sleep(2 * ttlMs);
      expect(states.filter((seen) => seen.length > 0)).toEqual([]);
      expect(sessions.map((session) => session.state)).toEqual(sessions.map(() => 'connected'));
      expect(holds.every((hold) => hold.held)).toBe(true);
      for (const [i, hold] of holds.entries()) expect(await backendOf(sessions[i]!).confirm(entryOf(hold))).toBe(true);
      await Promise.all(holds.map((hold) => hold.release()));
      // A session opened while the member hangs: connecting tries the next member, not only the first.
      for (let i = 0; i < 3; i += 1) {
        const late = await connect(`etcd://${proxies.map((proxy) => proxy.address).join(',')}/${scope.namespace}`, {
          ttlSeconds: ttlMs / 1000,
          connectTimeoutMs: 3 * ttlMs,
        });
        sessions.push(late);
        await (await new FairMutex(late, 'late').acquire({ timeoutMs: ttlMs })).release();
      }
      const ids = sessions.map((session) => session.id);
      await close();
      // close() revoked every lease, through a member that answers.
      expect(await scope.fixture.liveSessions(ids)).toEqual([]);
    } finally {
      await close();
    }
  }, 60_000);

  it('waiters are granted in order after a release while a member hangs', async () => {
    const { sessions, proxies, states, ttlMs, close } = await sessionsThroughProxies(5);
    try {
      const holder = await new FairMutex(sessions[0]!, 'queue').acquire();
      const order: number[] = [];
      const waits: Promise<void>[] = [];
      for (let i = 1; i < sessions.length; i += 1) {
        waits.push(
          later(
            new FairMutex(sessions[i]!, 'queue').acquire({ timeoutMs: 6 * ttlMs }).then(async (lock) => {
              order.push(i);
              await lock.release();
            }),
          ),
        );
        await eventually(
          `waiter ${i} queued`,
          async () => (await scope.fixture.entries(scope.namespace)).length === i + 1,
          ttlMs * 2,
        );
      }
      await eventually(
        'every keepalive stream dialled',
        () => sessions.every((session) => driver(session).keepAliveMember !== undefined),
        ttlMs,
      );
      busiest(proxies, sessions).blackhole();
      await holder.release();
      await Promise.all(waits);
      expect(order).toEqual([1, 2, 3, 4]);
      expect(states.filter((seen) => seen.length > 0)).toEqual([]);
    } finally {
      await close();
    }
  }, 60_000);

  it('a cluster slow on every member (renewals answered after half a keepalive interval) suspends no session', async () => {
    const { sessions, proxies, states, ttlMs, close } = await sessionsThroughProxies(3);
    // The keepalive renews every quarter TTL and sends again elsewhere after half of that; replies here
    // come later than the second send, but well within the interval.
    const delayMs = Math.floor((ttlMs / 4) * 0.55);
    try {
      // The servers turn slow (a stalled disk, a busy leader) once the sessions have a connection to
      // each member: a slow server, not a slow network, where dialling a member costs round trips too.
      await eventually(
        'a connection to every member',
        async () => {
          await Promise.all(sessions.map((session) => backendOf(session).list('warm-up')));
          return proxies.every((proxy) => proxy.connections > 0);
        },
        ttlMs,
      );
      for (const proxy of proxies) proxy.delayReplies(delayMs);
      const holds = await Promise.all(
        sessions.map((session, i) => new FairMutex(session, `slow-${i}`).acquire({ timeoutMs: 2 * ttlMs })),
      );
      await sleep(ttlMs);
      // Once the answers have been slow for a while, renewals wait longer before being sent again:
      // not a second stream every interval (four per lease time), at most one in the next lease time.
      const opened = sessions.map((session) => driver(session).keepAliveOpens);
      await sleep(ttlMs);
      expect(
        sessions.map((session, i) => driver(session).keepAliveOpens - opened[i]!).filter((opens) => opens > 1),
      ).toEqual([]);
      expect(states.filter((seen) => seen.length > 0)).toEqual([]);
      expect(holds.every((hold) => hold.held)).toBe(true);
      await Promise.all(holds.map((hold) => hold.release()));
    } finally {
      await close();
    }
  }, 60_000);
});
