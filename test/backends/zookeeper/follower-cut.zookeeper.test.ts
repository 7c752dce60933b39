import { connect, zkProbeOf } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { LockLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { useCuttableEnsemble } from '../../harness/faults/cuttable-ensemble.js';
import { zkMode } from '../../harness/servers/four-letter.js';

const TICK_MS = 200;
/** A follower that stops hearing from the leader notices after SYNC_LIMIT ticks: 4 s, twice the session. */
const SYNC_LIMIT = 20;
const SESSION_MS = 2_000;
/**
 * The leader hears of a session on a follower only with the follower's next answer to its ping (every
 * half tick), so its last word of the session can be up to a heartbeat interval (a sixth of the
 * session timeout) and half a tick older than the holder's last reply: the margin covers both.
 */
const MARGIN_MS = Math.ceil(SESSION_MS / 6 + TICK_MS / 2) + 50;

/**
 * A follower cut off from the leader but not from its clients. It keeps answering reads until it
 * notices (SYNC_LIMIT ticks), while the leader, which expires sessions, hears nothing of the sessions
 * connected to it. baton's heartbeat is a `sync`, which such a follower cannot answer: a holder
 * connected to it is told of its loss before the leader expires its session and grants the lock on.
 */
describe('ZooKeeper: a holder on a follower cut off from the leader', () => {
  const { links, cluster, scope } = useCuttableEnsemble({
    tickTimeMs: TICK_MS,
    syncLimit: SYNC_LIMIT,
    sessionTimeoutMs: SESSION_MS,
  });

  it('is told it lost the lock before the lock is granted to the next holder', async () => {
    const members = cluster().members;
    const modes = await Promise.all(members.map((member) => zkMode(member.clientPort)));
    const leader = members[modes.indexOf('leader')]!;
    const follower = members[modes.indexOf('follower')]!;
    const atFollower = await connect(`zk://127.0.0.1:${follower.clientPort}/${scope.namespace}`, {
      sessionTimeoutMs: SESSION_MS,
      deadlineMarginMs: MARGIN_MS,
    });
    try {
      expect(zkProbeOf(atFollower).view.heartbeatReachesLeader).toBe(true);
      // The next holder reaches the leader directly (through the whole ensemble it could land on the follower cut off).
      const atLeader = await connect(`zk://127.0.0.1:${leader.clientPort}/${scope.namespace}`, {
        sessionTimeoutMs: SESSION_MS,
      });
      const held = await new FairMutex(atFollower, 'cut').acquire();
      let toldAt = Number.NaN;
      held.signal.addEventListener('abort', () => (toldAt = performance.now()), { once: true });
      const next = new FairMutex(atLeader, 'cut')
        .acquire({ timeoutMs: SESSION_MS * 10 })
        .then((lock) => ({ lock, grantedAt: performance.now() }));
      // The follower's links to the leader go silent both ways; its clients still reach it.
      links.cut(follower.id, leader.id);
      const cutAt = performance.now();
      const { lock, grantedAt } = await next;
      expect(held.signal.aborted, 'the holder was not told before the next holder was granted').toBe(true);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(toldAt).toBeLessThan(grantedAt);
      // Told by its own deadline, well before the follower noticed (SYNC_LIMIT ticks after the cut).
      expect(toldAt - cutAt).toBeLessThan(SYNC_LIMIT * TICK_MS);
      expect(lock.fencingToken > held.fencingToken).toBe(true);
      await lock.release();
      await atLeader.close();
    } finally {
      links.heal(follower.id, leader.id);
      await atFollower.close();
    }
  });
});
