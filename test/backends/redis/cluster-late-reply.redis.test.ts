import { connect, redisProbeOf } from 'baton-locks/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { SessionLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { type RedisCluster, type RedisServer, startRedisCluster } from '../../harness/servers/redis.js';
import { eventually, track } from '../../harness/wait.js';

/** Short: the reply is held longer than this; every wait below is derived from it. */
const TIMEOUT_MS = 2_000;
const NAMESPACE = 'late-reply';
/** The member reached through the proxy (not the seed: the clients learn its proxied address from the cluster). */
const X = 2;

let cluster: RedisCluster | undefined;
let proxy: TcpProxy | undefined;
const sessions: Session[] = [];
const clients: Redis[] = [];

beforeAll(async () => {
  // X announces the proxy's port: every cluster client reaches X through the proxy, the others directly.
  cluster = await startRedisCluster({
    masters: 3,
    announce: async (member, port) => {
      if (member !== X) return undefined;
      proxy = await TcpProxy.start({ port });
      return proxy.port;
    },
  });
});

afterAll(async () => {
  await Promise.allSettled(sessions.splice(0).map((session) => session.close()));
  for (const client of clients.splice(0)) client.disconnect();
  await proxy?.close();
  await cluster?.stop();
});

function direct(member: RedisServer): Redis {
  const client = new Redis({ host: '127.0.0.1', port: member.port, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

async function open(): Promise<Session> {
  const session = await connect(`redis://${cluster!.addresses[0]}?namespace=${NAMESPACE}`, {
    sessionTimeoutMs: TIMEOUT_MS,
  });
  sessions.push(session);
  return session;
}

/** The slot ranges of the node that clients reach at `port`, from the cluster's slot map. */
async function slotsAt(admin: Redis, port: number): Promise<[number, number][]> {
  const map = (await admin.call('CLUSTER', 'SLOTS')) as [
    number,
    number,
    [string, number, ...unknown[]],
    ...unknown[],
  ][];
  return map.filter(([, , [, nodePort]]) => nodePort === port).map(([first, last]) => [first, last]);
}

describe("Redis Cluster: an enqueue answered after the lock's key expired", () => {
  it("a first enqueue whose reply from its lock's node is held past the timeout, while the session's own key is renewed on another node, is not granted: the session is lost, and the next holder keeps the lock alone", async () => {
    const seed = direct(cluster!.members[0]!);
    const onX = direct(cluster!.members[X]!);
    const slotsOfX = await slotsAt(seed, proxy!.port);
    expect(slotsOfX.length).toBeGreaterThan(0); // X is known to the cluster by the proxy's port
    const onXSlot = async (key: string): Promise<boolean> => {
      const slot = Number(await seed.call('CLUSTER', 'KEYSLOT', key));
      return slotsOfX.some(([first, last]) => slot >= first && slot <= last);
    };

    // A lock on X, and a session A whose own key is elsewhere (its renewals are answered all along).
    let lock = '';
    for (let i = 0; lock === ''; i += 1) if (await onXSlot(`baton:{${NAMESPACE}/late-${i}}:q`)) lock = `late-${i}`;
    let a: Session | undefined;
    while (a === undefined) {
      const session = await open();
      if (await onXSlot(redisProbeOf(session).view.sessionKey)) await session.close();
      else a = session;
    }
    const b = await open();
    const base = `baton:{${NAMESPACE}/${lock}}`;
    const aKey = `${base}:s:${a.id}`;

    // A partition between A and X alone: A's enqueue reaches X, its reply (and whatever follows on A's
    // connection to X) is held. B's connections to X, and A's to the other nodes, are forwarded.
    const enqueued = track(proxy!.holdRepliesAfterNextRequest((chunk) => chunk.includes(aKey)));
    const startedAt = performance.now();
    const acquiring = track(new FairMutex(a, lock).acquire());
    await eventually("A's enqueue on its way to X", () => enqueued.settled, TIMEOUT_MS);
    await eventually("A's key in the lock set by its enqueue", async () => (await onX.pttl(aKey)) > 0, TIMEOUT_MS);
    await eventually("A's key in the lock expired", async () => (await onX.pttl(aKey)) === -2, 2 * TIMEOUT_MS);
    const expiredAfterMs = performance.now() - startedAt;
    // A's session is renewed meanwhile on another node: connected, its acquire unanswered.
    expect(a.state).toBe('connected');
    expect(acquiring.settled).toBe(false);

    // B's enqueue drops A's dead entry: B holds the lock.
    const held = await new FairMutex(b, lock).acquire({ timeoutMs: TIMEOUT_MS });
    const onlyB = expect.arrayContaining([expect.stringMatching(new RegExp(`^${b.id}-\\d+$`))]);
    expect(await onX.hkeys(`${base}:q`)).toEqual(onlyB);
    expect(await onX.hlen(`${base}:q`)).toBe(1);

    // The partition heals: A's enqueue is answered, with A's entry alone at the head of the queue.
    let grantedWhileBHeld = false;
    void acquiring.promise.then(
      () => (grantedWhileBHeld = !held.signal.aborted),
      () => undefined,
    );
    const releasedAt = performance.now();
    proxy!.releaseReplies();
    await eventually("A's acquire settled", () => acquiring.settled, TIMEOUT_MS);
    const settledAfterMs = performance.now() - releasedAt;
    expect(grantedWhileBHeld, `A was granted ${lock} while B held it`).toBe(false);
    expect(acquiring.failure?.error).toBeInstanceOf(SessionLostError);
    expect(a.state).toBe('lost');
    // B's hold is intact, on the server too.
    expect(held.signal.aborted).toBe(false);
    expect(await onX.hkeys(`${base}:q`)).toEqual(onlyB);
    expect(await onX.hlen(`${base}:q`)).toBe(1);
    expect(await onX.pttl(`${base}:s:${b.id}`)).toBeGreaterThan(0);
    console.log(
      `reply held ${Math.round(releasedAt - startedAt)} ms (A's key gone after ${Math.round(expiredAfterMs)} ms); A's acquire settled ${Math.round(settledAfterMs)} ms after the release`,
    );
    await held.release();
  });
});
