import { getEventListeners } from 'node:events';

import { describe, expect, it } from 'vitest';

import { LeaderElection } from '../../recipes/election.js';
import { InvalidArgumentError, LockLostError, LockTimeoutError, SessionLostError } from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { useScope } from '../harness/backends/scope.js';
import { backendOf, entryOf } from '../harness/internals.js';
import { eventually, later, track } from '../harness/wait.js';

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
      await eventually('b queued', async () => (await backendOf(observer).list('jobs')).length === 2, 2_000);
      const third = track(later(new LeaderElection(c, 'jobs', { id: 'c' }).campaign()));
      await eventually('c queued', async () => (await backendOf(observer).list('jobs')).length === 3, 2_000);
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
      const next = later(
        new LeaderElection(b, 'expiry', { id: 'b' }).campaign({ timeoutMs: scope.fixture.lossDeadlineMs * 2 }),
      );
      await eventually('b queued', async () => (await backendOf(b).list('expiry')).length === 2, 2_000);
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
      await expect(new LeaderElection(b, 'timeout', { id: 'b' }).campaign({ timeoutMs: 50 })).rejects.toBeInstanceOf(
        LockTimeoutError,
      );
      expect((await backendOf(b).list('timeout')).map((entry) => entry.key)).toEqual([entryOf(leading).key]);
      await leading.resign();
    });

    it("a lock or read/write lock held on the election's name is no leader; a candidate behind it waits", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const election = new LeaderElection(b, 'shared-name', { id: 'b' });
      for (const take of [
        () => new FairMutex(a, 'shared-name').acquire(),
        () => new ReadWriteLock(a, 'shared-name').writeLock.acquire(),
      ]) {
        const held = await take();
        expect(await election.leader()).toBeNull();
        const campaign = track(later(election.campaign()));
        await eventually('b queued', async () => (await backendOf(b).list('shared-name')).length === 2, 2_000);
        expect(campaign.settled).toBe(false);
        await held.release();
        const leadership = await campaign.promise;
        await leaderBecomes(election, 'b');
        await leadership.resign();
      }
    });

    it('refuses an id that is not a non-empty string, synchronously, leaving nothing on the server', async () => {
      const session = await scope.open();
      for (const options of [{ id: '' }, { id: 7 }, {}, null, { id: 'x'.repeat(1_025) }]) {
        expect(() => new LeaderElection(session, 'bad', options as never)).toThrow(InvalidArgumentError);
      }
      expect(await backendOf(session).list('bad')).toEqual([]);
    });

    it('observe() reports every change of leader in order, from a session that does not campaign', async () => {
      const [a, b, c, c2, bystander] = [
        await scope.open(),
        await scope.open(),
        await scope.open(),
        await scope.open(),
        await scope.open(),
      ];
      const observer = new LeaderElection(bystander, 'observed', { id: 'bystander' }).observe();
      const next = async (): Promise<unknown> => (await observer.next()).value;
      const queued = (count: number): Promise<void> =>
        eventually(
          `${count} queued`,
          async () => (await backendOf(bystander).list('observed')).length === count,
          2_000,
        );
      expect(await next()).toBeNull();
      // Each time the observer is already waiting (on the empty queue, on the leader) when the change happens.
      let change = later(next());
      const leaderA = await new LeaderElection(a, 'observed', { id: 'a' }).campaign();
      expect(await change).toEqual({ id: 'a', fencingToken: leaderA.fencingToken });
      change = later(next());
      const electB = later(new LeaderElection(b, 'observed', { id: 'b' }).campaign());
      await queued(2);
      const electC = later(
        new LeaderElection(c, 'observed', { id: 'c' }).campaign({ timeoutMs: scope.fixture.lossDeadlineMs * 4 }),
      );
      await queued(3);
      await leaderA.resign();
      const leaderB = await electB;
      expect(await change).toEqual({ id: 'b', fencingToken: leaderB.fencingToken });
      // A leadership ended by the server (session expiry) is a change like any other.
      change = later(next());
      await scope.fixture.expire(b);
      const leaderC = await electC;
      expect(await change).toEqual({ id: 'c', fencingToken: leaderC.fencingToken });
      // Same id, new term: another process campaigning as "c" takes over; that is a change too.
      change = later(next());
      const electC2 = later(new LeaderElection(c2, 'observed', { id: 'c' }).campaign());
      await queued(2);
      await leaderC.resign();
      const leaderC2 = await electC2;
      expect(leaderC2.fencingToken).toBeGreaterThan(leaderC.fencingToken);
      expect(await change).toEqual({ id: 'c', fencingToken: leaderC2.fencingToken });
      change = later(next());
      await leaderC2.resign();
      expect(await change).toBeNull();
      expect(await observer.return()).toEqual({ done: true, value: undefined });
    });

    it('observe() reports a new term when the same session resigns and is elected again', async () => {
      const [a, bystander] = [await scope.open(), await scope.open()];
      const observer = new LeaderElection(bystander, 'again', { id: 'bystander' }).observe();
      expect((await observer.next()).value).toBeNull();
      const election = new LeaderElection(a, 'again', { id: 'a' });
      const first = await election.campaign();
      expect((await observer.next()).value).toEqual({ id: 'a', fencingToken: first.fencingToken });
      // Both happen while the observer is not looking: it must still see a new term (etcd reuses the key).
      await first.resign();
      const second = await election.campaign();
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      expect((await observer.next()).value).toEqual({ id: 'a', fencingToken: second.fencingToken });
      await second.resign();
      expect((await observer.next()).value).toBeNull();
      await observer.return();
    });

    it('observe() gives up on abort (withdrawing its watch) and ends with the session', async () => {
      const [bystander, doomed, candidate] = [await scope.open(), await scope.open(), await scope.open()];
      expect(() => new LeaderElection(bystander, 'quiet', { id: 'x' }).observe({ signal: 'no' } as never)).toThrow(
        InvalidArgumentError,
      );
      const stop = new AbortController();
      const observer = new LeaderElection(bystander, 'quiet', { id: 'x' }).observe({ signal: stop.signal });
      expect((await observer.next()).value).toBeNull();
      const waiting = later(observer.next());
      // The observer now waits on the empty queue; wait until its watch is on the server, then abort.
      await eventually(
        'the observer watches the queue',
        async () => (await scope.fixture.watched(scope.namespace)).length > 0,
        2_000,
      );
      const reason = new Error('enough');
      stop.abort(reason);
      await expect(waiting).rejects.toBe(reason);
      expect(await observer.next()).toEqual({ done: true, value: undefined });
      const left = await scope.fixture.watched(scope.namespace);
      if (scope.fixture.name.startsWith('ZooKeeper')) {
        // A ZooKeeper 3.4 client cannot remove a watch: the directory's child watch stays until its next change.
        expect(left).toEqual([`/${scope.namespace}/quiet`]);
        const leading = await new LeaderElection(candidate, 'quiet', { id: 'c' }).campaign();
        await leading.resign();
        await eventually(
          'the leftover watch fired, not armed again',
          async () => (await scope.fixture.watched(scope.namespace)).length === 0,
          2_000,
        );
      } else {
        expect(left).toEqual([]);
      }
      // An observer on a session that is lost ends with the session's error.
      const lost = new LeaderElection(doomed, 'quiet', { id: 'y' }).observe();
      expect((await lost.next()).value).toBeNull();
      const ending = later(lost.next());
      await scope.fixture.expire(doomed);
      await expect(ending).rejects.toBeInstanceOf(SessionLostError);
      expect(() => new LeaderElection(doomed, 'quiet', { id: 'y' }).observe()).toThrow(SessionLostError);
    });

    it('an observer dropped without return() while it sits at a yield holds no listener on the session or on its signal', async () => {
      const session = await scope.open();
      const stop = new AbortController();
      const before = getEventListeners(session.signal, 'abort').length;
      for (let i = 0; i < 3; i += 1) {
        const observer = new LeaderElection(session, 'dropped', { id: 'x' }).observe({ signal: stop.signal });
        expect((await observer.next()).value).toBeNull();
        // Dropped here, as a caller that stops reading without `break` or `return()` does.
      }
      expect(getEventListeners(session.signal, 'abort')).toHaveLength(before);
      expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    });

    it('under churn (candidates joining, resigning, losing their session) one leader at a time', async () => {
      const sessions = await Promise.all(Array.from({ length: 4 }, () => scope.open()));
      const beliefs: { id: string; from: number; to: number }[] = [];
      const candidate = async (index: number): Promise<void> => {
        for (let round = 0; round < 4; round += 1) {
          const session = sessions[index]!;
          if (session.state === 'lost') sessions[index] = await scope.open();
          const id = `c${index}-${round}`;
          const leading = await new LeaderElection(sessions[index]!, 'churn', { id }).campaign({
            timeoutMs: scope.fixture.lossDeadlineMs * 4,
          });
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
      // Two observers, one on a session that does not campaign, one on a candidate's own session.
      const stop = new AbortController();
      const observed: (string | null)[][] = [[], []];
      const tokens: bigint[][] = [[], []];
      const bystander = await scope.open();
      const observing = [bystander, sessions[3]!].map((session, index) =>
        later(
          (async () => {
            for await (const leader of new LeaderElection(session, 'churn', { id: 'observer' }).observe({
              signal: stop.signal,
            })) {
              observed[index]!.push(leader?.id ?? null);
              if (leader !== null) tokens[index]!.push(leader.fencingToken);
            }
          })(),
        ),
      );
      await eventually('both observers started', () => observed.every((seen) => seen.length > 0), 2_000);
      await Promise.all(sessions.map((_, index) => candidate(index)));
      await eventually(
        'both observers see nobody leading',
        () => observed.every((seen) => seen.at(-1) === null),
        2_000,
      );
      stop.abort(new Error('done'));
      for (const ending of observing) await expect(ending).rejects.toThrow('done');
      const elected = [...beliefs].sort((x, y) => x.from - y.from).map((belief) => belief.id);
      for (const [index, seen] of observed.entries()) {
        expect(seen[0], `observer ${index} starts with nobody leading`).toBeNull();
        const leaders = seen.filter((id): id is string => id !== null);
        // In the order they were elected (a subsequence: a term shorter than a round trip may be passed over).
        let at = -1;
        for (const id of leaders) {
          const found = elected.indexOf(id);
          expect(found, `observer ${index} saw ${id} after ${elected[at] ?? 'nobody'}`).toBeGreaterThan(at);
          at = found;
        }
        const own = tokens[index]!;
        for (let i = 1; i < own.length; i += 1)
          expect(own[i]!, `observer ${index}: fencing tokens increase`).toBeGreaterThan(own[i - 1]!);
        expect(leaders.length, `observer ${index} saw some of the leaders`).toBeGreaterThan(0);
      }
      beliefs.sort((x, y) => x.from - y.from);
      for (let i = 1; i < beliefs.length; i += 1) {
        // Server-side expiry can overlap the next leader (the lost one learns of it afterwards): fencing's case.
        if (beliefs[i - 1]!.id === 'c0-1') continue;
        expect(beliefs[i]!.from, `${beliefs[i]!.id} elected while ${beliefs[i - 1]!.id} led`).toBeGreaterThanOrEqual(
          beliefs[i - 1]!.to,
        );
      }
      expect(beliefs).toHaveLength(16);
    });
  });
}
