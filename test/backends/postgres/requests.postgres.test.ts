import { postgresCounters } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import { Semaphore } from '../../../recipes/semaphore.js';
import { postgresFixture } from '../../harness/backends/postgres.js';

const postgresLayout = () => layouts.find((layout) => layout.name === 'postgres')!;
import type { Session } from '../../../recipes/contract.js';
import { postgresUrl, withPostgres } from '../../harness/backends/postgres.js';
import { useScope } from '../../harness/backends/scope.js';
import { layouts, throughProxy } from '../../harness/faults/layouts.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { eventually, track } from '../../harness/wait.js';

/**
 * Waits on entries placed at another's place: a downgrade's read takes its writer's position and
 * token, a semaphore's announced grant its own old entry's; the row's own token still names the
 * channel its delete notifies. A waiter behind such an entry must be woken by that notification, not
 * by the backstop's re-read a quarter of the lease later.
 */
describe("PostgreSQL: the requests of a cycle, and waiters behind entries placed at another's place", () => {
  const scope = useScope(postgresFixture);

  it('an uncontended acquire and release is two statements (the enqueue function, the delete)', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'two');
    await (await mutex.acquire()).release(); // the first cycle as every later one: nothing to set up
    const before = postgresCounters.statements;
    for (let i = 0; i < 10; i += 1) await (await mutex.acquire()).release();
    expect((postgresCounters.statements - before) / 10).toBe(2);
  });

  it("a writer queued behind a downgraded read is woken by the read's release notification", async () => {
    const [owner, other] = [await scope.open(), await scope.open()];
    const rw = new ReadWriteLock(owner, 'downgraded');
    const write = await rw.writeLock.acquire();
    const waiting = track(
      new ReadWriteLock(other, 'downgraded').writeLock.acquire({ timeoutMs: scope.fixture.lossDeadlineMs }),
    );
    await eventually('writer queued', async () => (await backendOf(other).list('downgraded')).length === 2);
    const read = await rw.downgrade(write);
    // The waiting writer woke at the write's release, listed, and now waits for the read at its place.
    await eventually('the writer waits for the read', async () =>
      (await scope.fixture.watched(scope.namespace)).includes(entryOf(read).key),
    );
    const notified = postgresCounters.notifications;
    await read.release();
    const lock = await waiting.promise;
    expect(
      postgresCounters.notifications - notified,
      "woken by the read's notification, not the backstop",
    ).toBeGreaterThan(0);
    await lock.release();
  });

  it('a semaphore waiter behind an announced grant is woken by its release notification', async () => {
    const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
    const first = await new Semaphore(a, 'pool', { permits: 1 }).acquire();
    const second = track(new Semaphore(b, 'pool', { permits: 1 }).acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
    await eventually('second queued', async () => (await backendOf(a).list('pool')).length === 2);
    const third = track(new Semaphore(c, 'pool', { permits: 1 }).acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
    await eventually('third queued', async () => (await backendOf(a).list('pool')).length === 3);
    await first.release();
    const granted = await second.promise; // granted after waiting: announced, at its own old place
    await eventually('the third waits behind the announced entry', async () =>
      (await scope.fixture.watched(scope.namespace)).includes(entryOf(granted).key),
    );
    const notified = postgresCounters.notifications;
    await granted.release();
    const last = await third.promise;
    expect(postgresCounters.notifications - notified, 'woken by the notification, not the backstop').toBeGreaterThan(0);
    await last.release();
  });

  /** Plants an entry of `session`'s as a late enqueue attempt would leave it, ahead of anyone queueing after. */
  async function plantOrphan(session: Session, queue: string): Promise<string> {
    const row = session.id.replace(/^pg-/, '');
    const key = `s${row}.999999`;
    await withPostgres(postgresUrl(), (client) =>
      client.query(
        "INSERT INTO baton.entries (token, key, namespace, queue, position, kind, session) SELECT t, $1, $2, $3, t, 'lock', $4 FROM nextval('baton.tokens') AS t",
        [key, scope.namespace, queue, row],
      ),
    );
    return key;
  }

  it("an entry of the session's own that none of its handles or waiters stands for is deleted by its next look at the queue", async () => {
    const [owner, other] = [await scope.open(), await scope.open()];
    await plantOrphan(owner, 'orphan');
    const waiting = track(new FairMutex(other, 'orphan').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
    await eventually(
      'the other waits behind the orphan',
      async () => (await backendOf(other).list('orphan')).length === 2,
    );
    const removed = postgresCounters.orphansRemoved;
    expect(await backendOf(owner).list('orphan')).toHaveLength(1); // the orphan left out, and deleted
    const lock = await waiting.promise;
    expect(postgresCounters.orphansRemoved - removed).toBe(1);
    await lock.release();
  });

  it('after an enqueue cut once its request reached the server, the session looks at that queue and deletes an orphan of its own there', async () => {
    const { proxy, session, close } = await throughProxy(postgresLayout(), scope.namespace);
    try {
      const other = await scope.open();
      // The enqueue's reply is lost: its attempt is of unknown fate, and a copy could be applied late.
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes('.enqueue'));
      const held = await new FairMutex(session, 'late').acquire({ timeoutMs: scope.fixture.lossDeadlineMs });
      await cut;
      await held.release();
      // Such a late copy, applied after the release: nobody of the session will list this queue again.
      await plantOrphan(session, 'late');
      const removed = postgresCounters.orphansRemoved;
      const lock = await new FairMutex(other, 'late').acquire({ timeoutMs: scope.fixture.lossDeadlineMs });
      expect(postgresCounters.orphansRemoved - removed).toBe(1);
      await lock.release();
    } finally {
      await close();
    }
  });
});
