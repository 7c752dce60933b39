import { describe, expect, it, vi } from 'vitest';

import type { Session } from '../../recipes/contract.js';
import { LeaderElection } from '../../recipes/election.js';
import { ClosedError, LockLostError, LockTimeoutError, SessionLostError } from '../../recipes/errors.js';
import type { LockEvent } from '../../recipes/events.js';
import { MultiLock } from '../../recipes/multilock.js';
import { FairMutex } from '../../recipes/mutex.js';
import { Reentrant } from '../../recipes/reentrant.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { Semaphore } from '../../recipes/semaphore.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { useScope } from '../harness/backends/scope.js';
import { backendOf, entryOf, internalsOf } from '../harness/internals.js';
import { eventually, later } from '../harness/wait.js';

/** Every lock event the session tells from now on, in order. */
function record(session: Session): LockEvent[] {
  const events: LockEvent[] = [];
  session.on('lock', (event) => events.push(event));
  return events;
}

/** The events as short lines, for comparing whole sequences: `granted write config`. */
function story(events: readonly LockEvent[]): string[] {
  return events.map((event) => `${event.type} ${event.kind} ${event.name}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Timers may fire a fraction of a millisecond before `performance.now()` says the time is up. */
const SLACK_MS = 2;

/** The lock-event contract, written once and run against every backend. */
export function eventsContract(getFixture: () => Fixture): void {
  describe(`Lock events on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);
    const queued = (session: Session, name: string, length: number): Promise<void> =>
      eventually(
        `"${name}" holding ${length}`,
        async () => (await backendOf(session).list(name)).length === length,
        2_000,
      );

    it('an acquire tells requested, granted (wait, token) and released (hold), once each', async () => {
      const session = await scope.open();
      const events = record(session);
      const lock = await new FairMutex(session, 'plain').acquire();
      expect(story(events)).toEqual(['requested lock plain', 'granted lock plain']);
      await sleep(30);
      await lock.release();
      await lock.release();
      expect(story(events)).toEqual(['requested lock plain', 'granted lock plain', 'released lock plain']);
      const [, granted, released] = events;
      expect(granted).toMatchObject({ type: 'granted', fencingToken: lock.fencingToken });
      expect(released).toMatchObject({ type: 'released', fencingToken: lock.fencingToken });
      expect((granted as { waitMs: number }).waitMs).toBeGreaterThanOrEqual(0);
      expect((released as { holdMs: number }).holdMs).toBeGreaterThanOrEqual(30 - SLACK_MS);
    });

    it('a waiter granted when the holder releases: its waitMs covers the wait', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'handoff').acquire();
      const events = record(b);
      const waiting = later(new FairMutex(b, 'handoff').acquire());
      await queued(a, 'handoff', 2);
      await sleep(50);
      expect(story(events)).toEqual(['requested lock handoff']);
      await held.release();
      const lock = await waiting;
      expect(story(events)).toEqual(['requested lock handoff', 'granted lock handoff']);
      expect((events[1] as { waitMs: number }).waitMs).toBeGreaterThanOrEqual(50 - SLACK_MS);
      await lock.release();
    });

    it('a timed-out waiter tells timedOut once, when its entry is already withdrawn', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'timeout').acquire();
      const events = record(b);
      // Listed by the waiter's own session the moment it is told: a session reads its own deletes.
      let listing: Promise<string[]> | undefined;
      b.on('lock', (event) => {
        if (event.type === 'timedOut')
          listing = backendOf(b)
            .list('timeout')
            .then((entries) => entries.map((entry) => entry.key));
      });
      await expect(new FairMutex(b, 'timeout').acquire({ timeoutMs: 60 })).rejects.toBeInstanceOf(LockTimeoutError);
      expect(story(events)).toEqual(['requested lock timeout', 'timedOut lock timeout']);
      expect((events[1] as { waitMs: number }).waitMs).toBeGreaterThanOrEqual(60 - SLACK_MS);
      expect(await listing).toEqual([entryOf(held).key]);
      await held.release();
    });

    it("an aborted waiter tells aborted with the signal's reason; a session closed under a waiter tells failed", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'abort').acquire();
      const events = record(b);
      const controller = new AbortController();
      const waiting = later(new FairMutex(b, 'abort').acquire({ signal: controller.signal }));
      await queued(a, 'abort', 2);
      const reason = new Error('caller gave up');
      controller.abort(reason);
      await expect(waiting).rejects.toBe(reason);
      const closing = later(new FairMutex(b, 'abort').acquire());
      await queued(a, 'abort', 2);
      await b.close();
      await expect(closing).rejects.toBeInstanceOf(ClosedError);
      expect(story(events)).toEqual([
        'requested lock abort',
        'aborted lock abort',
        'requested lock abort',
        'failed lock abort',
      ]);
      expect(events[1]).toMatchObject({ type: 'aborted', reason });
      expect((events[3] as { error: unknown }).error).toBeInstanceOf(ClosedError);
      await held.release();
    });

    it('tryAcquire tells requested then granted, or busy when the lock is taken', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const [eventsA, eventsB] = [record(a), record(b)];
      const held = await new FairMutex(a, 'try').tryAcquire();
      expect(await new FairMutex(b, 'try').tryAcquire()).toBeNull();
      await held!.release();
      expect(story(eventsA)).toEqual(['requested lock try', 'granted lock try', 'released lock try']);
      expect(story(eventsB)).toEqual(['requested lock try', 'busy lock try']);
      await queued(b, 'try', 0);
    });

    it('a hold lost with its session tells lost once (reason LockLostError); its release afterwards tells nothing', async () => {
      const fixture = scope.fixture;
      const [a, b] = [await scope.open(), await scope.open()];
      const [eventsA, eventsB] = [record(a), record(b)];
      const held = await new FairMutex(a, 'expiry').acquire();
      const ownWaiter = later(new FairMutex(a, 'expiry').acquire());
      const next = later(new FairMutex(b, 'expiry').acquire());
      await queued(b, 'expiry', 3);
      await sleep(20);
      await fixture.expire(a);
      await eventually('the holder told', () => held.signal.aborted, fixture.lossDeadlineMs);
      await expect(ownWaiter).rejects.toBeInstanceOf(SessionLostError);
      await held.release();
      await sleep(50);
      expect(story(eventsA.slice(0, 3))).toEqual([
        'requested lock expiry',
        'granted lock expiry',
        'requested lock expiry',
      ]);
      // Which is told first depends on the backend (etcd may wake the waiter before the holder is told).
      expect(story(eventsA.slice(3)).sort()).toEqual(['failed lock expiry', 'lost lock expiry']);
      const lost = eventsA.find((event) => event.type === 'lost')!;
      expect(lost.reason).toBeInstanceOf(LockLostError);
      expect(lost.reason).toBe(held.signal.reason);
      expect(lost.fencingToken).toBe(held.fencingToken);
      expect(lost.holdMs).toBeGreaterThanOrEqual(20 - SLACK_MS);
      expect(eventsA.find((event) => event.type === 'failed')!.error).toBeInstanceOf(SessionLostError);
      const lock = await next;
      expect(story(eventsB)).toEqual(['requested lock expiry', 'granted lock expiry']);
      await lock.release();
    });

    it('a hold whose entry another client deleted tells lost once, through every later check of its holds', async () => {
      const fixture = scope.fixture;
      const session = await scope.open();
      const events = record(session);
      const held = await new FairMutex(session, 'deleted').acquire();
      const other = await new FairMutex(session, 'kept').acquire();
      await fixture.removeEntry(entryOf(held).key);
      await eventually('the holder told', () => held.signal.aborted, fixture.lossDeadlineMs);
      // The session keeps confirming its holds (a sixth of the timeout apart), but no longer the lost one:
      // nothing of it is left on the server.
      const confirm = vi.spyOn(backendOf(session), 'confirm');
      await sleep(Math.min(fixture.lossDeadlineMs, 1_000));
      const confirmed = confirm.mock.calls.map(([entry]) => entry.key);
      confirm.mockRestore();
      expect(confirmed).toContain(entryOf(other).key);
      expect(confirmed).not.toContain(entryOf(held).key);
      await held.release();
      await other.release();
      expect(story(events).filter((line) => line.endsWith(' deleted'))).toEqual([
        'requested lock deleted',
        'granted lock deleted',
        'lost lock deleted',
      ]);
    });

    it('read and write locks tell their kind; a downgrade tells the read grant, then the write release', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const [eventsA, eventsB] = [record(a), record(b)];
      const rwA = new ReadWriteLock(a, 'config');
      const write = await rwA.writeLock.acquire();
      const reader = later(new ReadWriteLock(b, 'config').readLock.acquire());
      await queued(b, 'config', 2);
      const read = await rwA.downgrade(write);
      const readB = await reader;
      await Promise.all([read.release(), readB.release()]);
      expect(story(eventsA)).toEqual([
        'requested write config',
        'granted write config',
        'requested read config',
        'granted read config',
        'released write config',
        'released read config',
      ]);
      expect(story(eventsB)).toEqual(['requested read config', 'granted read config', 'released read config']);
    });

    it('an election tells its candidacy as kind candidate: elected, resigned, and a campaign that timed out', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const [eventsA, eventsB] = [record(a), record(b)];
      const leading = await new LeaderElection(a, 'leader', { id: 'a' }).campaign();
      await expect(new LeaderElection(b, 'leader', { id: 'b' }).campaign({ timeoutMs: 30 })).rejects.toBeInstanceOf(
        LockTimeoutError,
      );
      await leading.resign();
      expect(story(eventsA)).toEqual([
        'requested candidate leader',
        'granted candidate leader',
        'released candidate leader',
      ]);
      expect(story(eventsB)).toEqual(['requested candidate leader', 'timedOut candidate leader']);
    });

    it('a reentrant re-entry tells nothing: only the real acquire and the final release', async () => {
      const session = await scope.open();
      const events = record(session);
      const re = new Reentrant(new FairMutex(session, 'nested'));
      await re.withLock(() => re.withLock(() => re.withLock(() => sleep(1))));
      const owner = Symbol('job');
      const outer = await re.acquire({ owner });
      await (await re.acquire({ owner })).release();
      await outer.release();
      expect(story(events)).toEqual([
        'requested lock nested',
        'granted lock nested',
        'released lock nested',
        'requested lock nested',
        'granted lock nested',
        'released lock nested',
      ]);
    });

    it('a wait that began before anyone listened is not told, not even its end', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'unheard').acquire();
      const waiting = later(new FairMutex(b, 'unheard').acquire());
      await queued(a, 'unheard', 2);
      const events = record(b);
      await held.release();
      await (await waiting).release();
      expect(events).toEqual([]);
      await (await new FairMutex(b, 'unheard').acquire()).release();
      expect(story(events)).toEqual(['requested lock unheard', 'granted lock unheard', 'released lock unheard']);
    });

    it('with nobody listening no event is built: every kind of story runs without calling report()', async () => {
      const fixture = scope.fixture;
      const [a, b] = [await scope.open(), await scope.open()];
      let reports = 0;
      for (const session of [a, b]) {
        internalsOf(session).report = () => {
          reports += 1;
          throw new Error('an event was built while nobody listened');
        };
      }
      const held = await new FairMutex(a, 'quiet').acquire();
      await expect(new FairMutex(b, 'quiet').acquire({ timeoutMs: 20 })).rejects.toBeInstanceOf(LockTimeoutError);
      await expect(new FairMutex(b, 'quiet').acquire({ signal: AbortSignal.timeout(20) })).rejects.toBeInstanceOf(
        DOMException,
      );
      expect(await new FairMutex(b, 'quiet').tryAcquire()).toBeNull();
      const waiting = later(new FairMutex(b, 'quiet').acquire());
      await queued(a, 'quiet', 2);
      await held.release();
      await (await waiting).release();
      const rw = new ReadWriteLock(a, 'quiet-rw');
      await (await rw.downgrade(await rw.writeLock.acquire())).release();
      const re = new Reentrant(new FairMutex(a, 'quiet-re'));
      await re.withLock(() => re.withLock(() => undefined));
      await (await new LeaderElection(a, 'quiet-election', { id: 'a' }).campaign()).resign();
      const deleted = await new FairMutex(b, 'quiet-deleted').acquire();
      await fixture.removeEntry(entryOf(deleted).key);
      await eventually('the holder of a deleted entry told', () => deleted.signal.aborted, fixture.lossDeadlineMs);
      await deleted.release();
      const lost = await new FairMutex(a, 'quiet').acquire();
      const failing = later(new FairMutex(a, 'quiet').acquire());
      await queued(a, 'quiet', 2);
      await fixture.expire(a);
      await eventually('the holder told', () => lost.signal.aborted, fixture.lossDeadlineMs);
      await expect(failing).rejects.toBeInstanceOf(SessionLostError);
      await lost.release();
      expect(reports).toBe(0);
    });

    it('off() stops the events', async () => {
      const session = await scope.open();
      const events: LockEvent[] = [];
      const listener = (event: LockEvent): void => void events.push(event);
      session.on('lock', listener);
      await (await new FairMutex(session, 'off').acquire()).release();
      session.off('lock', listener);
      await (await new FairMutex(session, 'off').acquire()).release();
      expect(events).toHaveLength(3);
      expect(internalsOf(session).reporting).toBe(false);
    });

    it("a semaphore tells its stories with kind semaphore, a grant after a wait once, with the handle's token", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const [eventsA, eventsB] = [record(a), record(b)];
      const held = await new Semaphore(a, 'pool', { permits: 1 }).acquire();
      const waiting = later(new Semaphore(b, 'pool', { permits: 1 }).acquire());
      await queued(a, 'pool', 2);
      expect(await new Semaphore(a, 'pool', { permits: 1 }).tryAcquire()).toBeNull();
      await held.release();
      const next = await waiting;
      await next.release();
      expect(story(eventsA)).toEqual([
        'requested semaphore pool',
        'granted semaphore pool',
        'requested semaphore pool',
        'busy semaphore pool',
        'released semaphore pool',
      ]);
      expect(story(eventsB)).toEqual(['requested semaphore pool', 'granted semaphore pool', 'released semaphore pool']);
      expect(eventsB[1]).toMatchObject({ fencingToken: next.fencingToken });
      expect(eventsB[2]).toMatchObject({ fencingToken: next.fencingToken });
    });

    it('a MultiLock tells the story of each of its locks, in the order they are taken', async () => {
      const a = await scope.open();
      const events = record(a);
      const locks = await new MultiLock(a, ['m/2', 'm/1']).acquire();
      await locks.release();
      expect(story(events).slice(0, 4)).toEqual([
        'requested lock m/1',
        'granted lock m/1',
        'requested lock m/2',
        'granted lock m/2',
      ]);
      expect(story(events).slice(4).sort()).toEqual(['released lock m/1', 'released lock m/2']);
    });
  });
}
