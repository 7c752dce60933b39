import net from 'node:net';

import { describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { LockLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { connect } from '../../../src/connect.js';
import { useCuttableEnsemble } from '../../harness/faults/cuttable-ensemble.js';
import { zkMode } from '../../harness/servers/four-letter.js';
import { listenOnLoopback } from '../../harness/servers/proxy.js';
import type { ZkMember } from '../../harness/servers/zookeeper.js';
import { eventually } from '../../harness/wait.js';

const TICK_MS = 200;
/** ZooKeeper's sample configuration's syncLimit: a follower cut off notices after 5 ticks. */
const SYNC_LIMIT = 5;
const SESSION_MS = 2_000;
const ROUNDS = 5;
/** Holders cut off at once in each round, each on its own lock with its own next holder. */
const HOLDERS = 4;

/**
 * A relay to a member's client port that calls `onSync` each time it passes on what looks like the
 * answer to baton's heartbeat (a sync of `/`: a 21-byte frame whose payload is the path `/`), so that
 * the test can cut the member off right after a holder's heartbeat was answered: the worst moment,
 * when the leader may not have heard of that heartbeat yet.
 */
async function heartbeatRelay(port: number, onSync: () => void): Promise<{ port: number; close(): void }> {
  const sockets = new Set<net.Socket>();
  const { server, port: relayPort } = await listenOnLoopback((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port });
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      const end = chunk.length;
      if (
        end >= 25 &&
        chunk.readInt32BE(end - 25) === 21 &&
        chunk.readInt32BE(end - 5) === 1 &&
        chunk[end - 1] === 0x2f
      )
        onSync();
    });
    for (const socket of [client, upstream])
      socket.on('error', () => undefined).on('close', () => (client.destroy(), upstream.destroy()));
  });
  return {
    port: relayPort,
    close: () => {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

/**
 * The core promise on an ensemble, with default options: a holder connected to a follower that is cut
 * off from the leader (both ways, quorum and election ports; its clients still reach it) is told it
 * lost its lock before the leader expires its session and grants the lock to a client of its own.
 */
describe('ZooKeeper: holders on a follower cut off from the leader, default options', () => {
  const { links, cluster, scope } = useCuttableEnsemble({
    tickTimeMs: TICK_MS,
    syncLimit: SYNC_LIMIT,
    sessionTimeoutMs: SESSION_MS,
  });

  async function roles(): Promise<{ leader: ZkMember; follower: ZkMember }> {
    const members = cluster().members;
    let modes: (string | undefined)[] = [];
    await eventually(
      'a leader and two followers',
      async () => {
        modes = await Promise.all(members.map((member) => zkMode(member.clientPort)));
        return modes.filter((mode) => mode === 'follower').length === 2 && modes.includes('leader');
      },
      SESSION_MS * 20,
    );
    return { leader: members[modes.indexOf('leader')]!, follower: members[modes.indexOf('follower')]! };
  }

  it('every pair of members talks through the proxies only, election dial-backs included', async () => {
    await roles();
    for (const [a, b] of [
      [1, 2],
      [1, 3],
      [2, 3],
    ] as const) {
      await eventually(
        `an election connection between ${a} and ${b} through a proxy`,
        () => links.proxy(a, b, 'election').connections + links.proxy(b, a, 'election').connections > 0,
        SESSION_MS * 5,
      );
    }
  });

  it(`each holder is told before the next holder is granted (${ROUNDS * HOLDERS} holders in ${ROUNDS} cuts)`, async () => {
    const gaps: number[] = [];
    const late: string[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const { leader, follower } = await roles();
      let cutAt = Number.NaN;
      const cut = (): void => {
        if (!Number.isNaN(cutAt)) return;
        cutAt = performance.now();
        links.cut(follower.id, leader.id);
      };
      let armed = false;
      // The cut comes right after the heartbeat of this round's first holder is answered.
      const relay = await heartbeatRelay(follower.clientPort, () => armed && cut());
      const sessions: Session[] = [];
      try {
        const trials = await Promise.all(
          Array.from({ length: HOLDERS }, async (_, i) => {
            const url = (port: number): string => `zk://127.0.0.1:${port}/${scope.namespace}`;
            // Default options: only the session timeout is chosen (short, to keep the test short).
            const atFollower = await connect(url(i === 0 ? relay.port : follower.clientPort), {
              sessionTimeoutMs: SESSION_MS,
            });
            const atLeader = await connect(url(leader.clientPort), { sessionTimeoutMs: SESSION_MS });
            sessions.push(atFollower, atLeader);
            const name = `cut-${round}-${i}`;
            const held = await new FairMutex(atFollower, name).acquire();
            let toldAt = Number.NaN;
            held.signal.addEventListener('abort', () => (toldAt = performance.now()), { once: true });
            const granted = new FairMutex(atLeader, name).acquire({ timeoutMs: SESSION_MS * 10 }).then(async (lock) => {
              const grantedAt = performance.now();
              await lock.release();
              return grantedAt;
            });
            return { held, granted, told: () => toldAt };
          }),
        );
        armed = true;
        const grants = await Promise.all(trials.map((trial) => trial.granted));
        for (const [i, trial] of trials.entries()) {
          const gap = grants[i]! - trial.told();
          gaps.push(gap);
          if (!(trial.held.signal.reason instanceof LockLostError))
            late.push(`round ${round}, holder ${i}: not told it lost the lock`);
          else if (!(gap > 0))
            late.push(
              `round ${round}, holder ${i}${i === 0 ? ' (cut right after its heartbeat)' : ''}: told ${(-gap).toFixed(1)} ms after the next grant`,
            );
        }
      } finally {
        links.heal(follower.id, leader.id);
        relay.close();
        await Promise.allSettled(sessions.map((session) => session.close()));
      }
    }
    const sorted = [...gaps].sort((a, b) => a - b);
    console.info(
      `follower cut off from the leader: ${gaps.length - late.length}/${gaps.length} holders told before the next grant; smallest gap ${sorted[0]!.toFixed(1)} ms, ` +
        `median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms (session ${SESSION_MS} ms, tick ${TICK_MS} ms, syncLimit ${SYNC_LIMIT}, default margin)`,
    );
    expect(late, 'holders told only after the next holder was granted').toEqual([]);
  }, 300_000);
});
