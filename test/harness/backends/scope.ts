import { randomUUID } from 'node:crypto';

import { connect, zkProbeOf } from 'baton-locks/testing';
import { afterEach, beforeEach, expect } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import type { ConnectOptions } from '../../../src/connect.js';
import { eventually } from '../wait.js';
import type { Fixture } from './fixture.js';

export interface Scope {
  readonly fixture: Fixture;
  /** This test's own namespace. */
  readonly namespace: string;
  /** Opens a session in this test's namespace (with `options` on top of the fixture's); closed after the test. */
  open(options?: ConnectOptions): Promise<Session>;
}

/**
 * Gives every test its own namespace and, after it, checks with the sessions still open that no
 * entry and no watch was left behind (Curator's clean-state check), then closes everything.
 */
export function useScope(getFixture: () => Fixture): Scope {
  let namespace = '';
  let sessions: Session[] = [];
  const scope: Scope = {
    get fixture() {
      return getFixture();
    },
    get namespace() {
      return namespace;
    },
    async open(options?: ConnectOptions) {
      const session = await connect(getFixture().url(namespace), { ...getFixture().options, ...options });
      sessions.push(session);
      return session;
    },
  };
  beforeEach(() => {
    namespace = `t-${randomUUID().slice(0, 8)}`;
    sessions = [];
  });
  afterEach(async () => {
    const fixture = getFixture();
    try {
      if (fixture.laggingReads) {
        // The checking client may be served by a follower a moment behind the test's last delete.
        await eventually('entries gone', async () => (await fixture.entries(namespace)).length === 0, 1_000).catch(
          () => undefined,
        );
      }
      expect(await fixture.entries(namespace), 'entries left behind').toEqual([]);
      // On ZooKeeper a session keeps a watch on each queue directory it found quiet (see
      // `QuietDirectories.aloneAfter`), one per directory, for as long as it lives: by design, not left behind.
      const quiet = new Set(sessions.flatMap((session) => quietDirectoriesOf(fixture, session)));
      expect(
        (await fixture.watched(namespace)).filter((path) => !quiet.has(path)),
        'watches left behind',
      ).toEqual([]);
    } finally {
      await Promise.allSettled(sessions.map((session) => session.close()));
      await fixture.cleanup(namespace);
    }
    expect(
      await fixture.liveSessions(sessions.map((session) => session.id)),
      'sessions still alive on the server after close()',
    ).toEqual([]);
  });
  return scope;
}

/**
 * The directories a ZooKeeper session keeps a watch on by design (see `QuietDirectories.aloneAfter`),
 * none on other backends. The session must come from the testing `connect`.
 */
export function quietDirectoriesOf(fixture: Fixture, session: Session): readonly string[] {
  return fixture.url('x').startsWith('zk://') ? zkProbeOf(session).view.quietDirectories : [];
}
