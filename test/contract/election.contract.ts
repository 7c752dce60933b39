import { describe, expect, it } from 'vitest';
import { LeaderElection } from '../../recipes/election.js';
import { InvalidArgumentError, LockLostError, LockTimeoutError, SessionLostError } from '../../recipes/errors.js';
import type { Fixture } from '../support/fixture.js';
import { useScope } from '../support/scope.js';
import { eventually, later, track } from '../support/wait.js';

/** The LeaderElection contract, written once and run against every backend. */
export function electionContract(getFixture: () => Fixture): void {
  describe(`LeaderElection on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);
    // A ZooKeeper follower may answer a read a moment before it applied another session's write.
    const leaderBecomes = async (election: LeaderElection, id: string | null): Promise<void> =>
      eventually(`leader ${id}`, async () => (await election.leader()) === id, 2_000);

    it('elects candidates one at a time in the order they campaigned; any session can name the leader', async () => {
      const [a, b, c, observer] = [await scope.open(), await scope.open(), await scope.open(), await scope.open()];
      const watching = new LeaderElection(observer, 'jobs', { id: 'observer' });
      expect(await watching.leader()).toBeNull();
      const first = await new LeaderElection(a, 'jobs', { id: 'a' }).campaign();
      expect(first.id).toBe('a');
      await leaderBecomes(watching, 'a');
      const second = track(later(new LeaderElection(b, 'jobs', { id: 'b' }).campaign()));
      await eventually('b queued', async () => (await observer.backend.list('jobs')).length === 2, 2_000);
      const third = track(later(new LeaderElection(c, 'jobs', { id: 'c' }).campaign()));
      await eventually('c queued', async () => (await observer.backend.list('jobs')).length === 3, 2_000);
      expect(second.settled || third.settled, 'elected while another leads').toBe(false);
      await leaderBecomes(watching, 'a');
      await first.resign();
      await first.resign(); // idempotent
      const leaderB = await second.promise;
      expect(third.settled, 'c elected before b resigned').toBe(false);
      expect(leaderB.fencingToken).toBeGreaterThan(first.fencingToken);
      await leaderBecomes(watching, 'b');
      await leaderB.resign();
      const leaderC = await third.promise;
      await leaderBecomes(watching, 'c');
      await leaderC.resign();
      await leaderBecomes(watching, null);
    });

    it('leadership ends with LockLostError when the session is lost, and the next candidate is elected', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const leading = await new LeaderElection(a, 'expiry', { id: 'a' }).campaign();
      const next = later(new LeaderElection(b, 'expiry', { id: 'b' }).campaign({ timeoutMs: scope.fixture.lossDeadlineMs * 2 }));
      await eventually('b queued', async () => (await b.backend.list('expiry')).length === 2, 2_000);
      await scope.fixture.expire(a);
      const leaderB = await next;
      await eventually('the lost leader told', () => leading.signal.aborted, scope.fixture.lossDeadlineMs);
      expect(leading.signal.reason).toBeInstanceOf(LockLostError);
      expect((leading.signal.reason as LockLostError).cause).toBeInstanceOf(SessionLostError);
      expect(leaderB.fencingToken).toBeGreaterThan(leading.fencingToken);
      await leaderB.resign();
    });

    it('a campaign that times out withdraws its candidacy', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const leading = await new LeaderElection(a, 'timeout', { id: 'a' }).campaign();
      await expect(new LeaderElection(b, 'timeout', { id: 'b' }).campaign({ timeoutMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
      expect((await b.backend.list('timeout')).map((entry) => entry.key)).toEqual([leading.entry.key]);
      await leading.resign();
    });

    it('refuses an id that is not a non-empty string, synchronously, leaving nothing on the server', async () => {
      const session = await scope.open();
      for (const options of [{ id: '' }, { id: 7 }, {}, null, { id: 'x'.repeat(1_025) }]) {
        expect(() => new LeaderElection(session, 'bad', options as never)).toThrow(InvalidArgumentError);
      }
      expect(await session.backend.list('bad')).toEqual([]);
    });

    it('under churn (candidates joining, resigning, losing their session) one leader at a time', async () => {
      const sessions = await Promise.all(Array.from({ length: 4 }, () => scope.open()));
      const beliefs: { id: string; from: number; to: number }[] = [];
      const candidate = async (index: number): Promise<void> => {
        for (let round = 0; round < 4; round += 1) {
          const session = sessions[index]!;
          if (session.state === 'lost') sessions[index] = await scope.open();
          const id = `c${index}-${round}`;
          const leading = await new LeaderElection(sessions[index]!, 'churn', { id }).campaign({ timeoutMs: scope.fixture.lossDeadlineMs * 4 });
          const from = performance.now();
          let to = Number.NaN;
          leading.signal.addEventListener('abort', () => (to = performance.now()), { once: true });
          if (index === 0 && round === 1) {
            // This leadership ends by loss: the server ends the session, the leader is told afterwards.
            await scope.fixture.expire(sessions[index]!);
            await eventually('the lost leader told', () => leading.signal.aborted, scope.fixture.lossDeadlineMs);
          } else {
            await new Promise((resolve) => setTimeout(resolve, 5));
            to = performance.now(); // the belief ends where the resignation starts
            await leading.resign();
          }
          beliefs.push({ id, from, to });
        }
      };
      await Promise.all(sessions.map((_, index) => candidate(index)));
      beliefs.sort((x, y) => x.from - y.from);
      for (let i = 1; i < beliefs.length; i += 1) {
        // Server-side expiry can overlap the next leader (the lost one learns of it afterwards): fencing's case.
        if (beliefs[i - 1]!.id === 'c0-1') continue;
        expect(beliefs[i]!.from, `${beliefs[i]!.id} elected while ${beliefs[i - 1]!.id} led`).toBeGreaterThanOrEqual(beliefs[i - 1]!.to);
      }
      expect(beliefs).toHaveLength(16);
    });
  });
}
