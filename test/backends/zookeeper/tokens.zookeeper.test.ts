import { zkCounters } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { LeaderElection } from '../../../recipes/election.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import { remove } from '../../../src/backends/zookeeper/client.js';
import { useScope } from '../../harness/backends/scope.js';
import { useZkAdmin, zkFixture, zkFixtureOf } from '../../harness/backends/zookeeper.js';
import { startZooKeeper, type ZkCluster } from '../../harness/servers/zookeeper.js';
import { eventually } from '../../harness/wait.js';

/** A signed 64-bit integer column (a ledger's BIGINT) holds every token below this. */
const INT64_LIMIT = 2n ** 63n;

function expectIncreasingInt64(tokens: readonly bigint[]): void {
  for (const token of tokens)
    expect(token > 0n && token < INT64_LIMIT, `token ${token} is not a positive signed 64-bit integer`).toBe(true);
  for (let i = 1; i < tokens.length; i += 1)
    expect(tokens[i]! > tokens[i - 1]!, `token ${tokens[i]} after ${tokens[i - 1]}`).toBe(true);
}

async function cycle(session: Session, name: string): Promise<bigint> {
  const lock = await new FairMutex(session, name).acquire({ timeoutMs: 10_000 });
  await lock.release();
  return lock.fencingToken;
}

/**
 * A ZooKeeper entry's fencing token is its own creation zxid (epoch << 32 | counter): below 2^63 while
 * the ensemble has had fewer than 2^31 leaders, increasing from holder to holder (entries are created
 * in the order they queue), across a directory deleted and created again, and across elections.
 */
describe.each(['zkStandalone', 'zkEnsemble'] as const)(
  'ZooKeeper fencing tokens: signed 64-bit and increasing, on %s',
  (which) => {
    const scope = useScope(() => zkFixture(which));
    const admin = useZkAdmin(() => inject(which).connectString);

    it('from holder to holder of one lock, on one session (listed and unlisted creates) and across sessions', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const tokens: bigint[] = [];
      const unlisted = zkCounters.unlisted;
      // One session alone: after two listings its creates go without one (a quiet directory).
      for (let i = 0; i < 5; i += 1) tokens.push(await cycle(a, 'alone'));
      expect(zkCounters.unlisted, 'no create went unlisted').toBeGreaterThan(unlisted);
      // Two sessions taking turns, each waiting for the other's hold.
      const held = await new FairMutex(a, 'alone').acquire();
      tokens.push(held.fencingToken);
      const next = new FairMutex(b, 'alone').acquire({ timeoutMs: 10_000 });
      await eventually('b queued', async () => (await scope.fixture.entries(scope.namespace)).length === 2, 5_000);
      await held.release();
      const granted = await next;
      tokens.push(granted.fencingToken);
      await granted.release();
      tokens.push(await cycle(a, 'alone'));
      expectIncreasingInt64(tokens);
    });

    it('across the lock directory deleted and created again', async () => {
      const session = await scope.open();
      const tokens = [await cycle(session, 'renewed')];
      for (let i = 0; i < 3; i += 1) {
        await remove(admin(), `/${scope.namespace}/renewed`);
        tokens.push(await cycle(session, 'renewed'));
        tokens.push(await cycle(session, 'renewed'));
      }
      expectIncreasingInt64(tokens);
    });

    it("a downgraded read keeps its writer's token; an observer sees the leader's own token", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const rw = new ReadWriteLock(a, 'rw');
      const write = await rw.writeLock.acquire();
      const read = await rw.downgrade(write);
      expect(read.fencingToken).toBe(write.fencingToken);
      await read.release();
      const leading = await new LeaderElection(a, 'lead', { id: 'x' }).campaign();
      const observer = new LeaderElection(b, 'lead', { id: 'y' }).observe();
      expect((await observer.next()).value).toEqual({ id: 'x', fencingToken: leading.fencingToken });
      await observer.return();
      await leading.resign();
      expectIncreasingInt64([write.fencingToken, leading.fencingToken]);
    });
  },
);

describe("ZooKeeper fencing tokens across a leader election (an ensemble of the test's own)", () => {
  const SESSION_MS = 4_000;
  let cluster: ZkCluster | undefined;
  beforeAll(async () => {
    cluster = await startZooKeeper({ size: 3 });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  const scope = useScope(() =>
    zkFixtureOf(
      {
        connectString: cluster!.connectString,
        ports: cluster!.members.map((m) => m.clientPort),
        sessionTimeoutMs: SESSION_MS,
      },
      'ZooKeeper (own ensemble)',
    ),
  );
  const admin = useZkAdmin(() => cluster!.connectString);

  it('keep increasing after the leader is killed, in the same directory and in one created again', async () => {
    const session = await scope.open();
    const tokens = [await cycle(session, 'kept'), await cycle(session, 'renewed')];
    const leader = await cluster!.leader();
    await leader!.kill();
    await leader!.start();
    // The session lives on (its timeout is longer than the election); the lock works again once a quorum serves.
    await eventually('a leader', async () => (await cluster!.leader()) !== undefined, SESSION_MS * 10);
    tokens.push(await cycle(session, 'kept'));
    await eventually(
      'the directory deleted',
      () =>
        remove(admin(), `/${scope.namespace}/renewed`).then(
          () => true,
          () => false,
        ),
      SESSION_MS * 5,
    );
    tokens.push(await cycle(session, 'renewed'));
    // zxids order every create of the ensemble: kept, renewed, kept again, renewed again.
    expectIncreasingInt64(tokens);
    // A zxid's high 32 bits are the leader's epoch: the tokens after the election carry a later one.
    expect(tokens[2]! >> 32n).toBeGreaterThan(tokens[0]! >> 32n);
    expect(tokens[3]! >> 32n).toBeGreaterThan(tokens[1]! >> 32n);
  }, 120_000);
});
