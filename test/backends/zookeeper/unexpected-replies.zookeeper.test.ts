import { connect } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { BackendError, LockLostError, SessionLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { zkCode, ZkServerCode } from '../../../src/backends/zookeeper/client.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { ZkOp, ZkReplyRewriter } from '../../harness/faults/zk-reply-rewriter.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';

// Answers a real server gives only in narrow races, made certain by changing one reply's error code on
// the way (the server handled the request as usual). node-zookeeper-client 1.1 throws, uncaught, on
// every code it does not know: without baton's guard, each of these tests would end its process.
describe('ZooKeeper: replies the client library does not expect', () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const info = inject('zkStandalone');

  async function throughRewriter(run: (session: Session, rewriter: ZkReplyRewriter) => Promise<void>): Promise<void> {
    const rewriter = await ZkReplyRewriter.start(info.ports[0]!);
    const session = await connect(
      scope.fixture.url(scope.namespace).replace(info.connectString, rewriter.address),
      scope.fixture.options,
    );
    try {
      await run(session, rewriter);
    } finally {
      await session.close();
      // A session lost to a changed reply is still alive on the server: the client's closeSession ends
      // it, and the server then hangs up. Not before that may the proxy go.
      await eventually('the server hung up', () => rewriter.connections === 0, info.sessionTimeoutMs);
      await rewriter.close();
    }
  }

  for (const [name, code] of [
    ['SESSION_EXPIRED', -112],
    ['UNKNOWN_SESSION', ZkServerCode.UNKNOWN_SESSION],
  ] as const) {
    it(`a reply ${name} (${code}) loses the session before the caller hears of it: state, holds and the error agree`, async () => {
      await throughRewriter(async (session, rewriter) => {
        const held = await new FairMutex(session, 'gone').acquire();
        const states: string[] = [];
        session.on('state', (state) => states.push(state));
        const answered = rewriter.answerNext(ZkOp.getChildren2, `/${scope.namespace}/gone`, code);
        let stateWhenTold: string | undefined;
        let holdAbortedWhenTold: boolean | undefined;
        const listing = backendOf(session)
          .list('gone')
          .catch((error: unknown) => {
            stateWhenTold = session.state;
            holdAbortedWhenTold = held.signal.aborted;
            throw error;
          });
        await expect(listing).rejects.toBeInstanceOf(SessionLostError);
        await answered;
        expect(stateWhenTold).toBe('lost');
        expect(holdAbortedWhenTold).toBe(true);
        expect(states).toEqual(['lost']);
        expect(held.signal.reason).toBeInstanceOf(LockLostError);
        expect((held.signal.reason as LockLostError).cause).toBeInstanceOf(SessionLostError);
        expect(zkCode((await listing.catch((error: unknown) => error)) as Error)).toBe(code);
      });
    });
  }

  it('a session lost to such a reply on a server that then goes silent does not keep its socket open', async () => {
    await throughRewriter(async (session, rewriter) => {
      const held = await new FairMutex(session, 'silent').acquire();
      const answered = rewriter.answerNext(ZkOp.getChildren2, `/${scope.namespace}/silent`, -112, {
        thenSilence: true,
      });
      await expect(backendOf(session).list('silent')).rejects.toBeInstanceOf(SessionLostError);
      await answered;
      expect(held.signal.aborted).toBe(true);
      // The close the client sends is never answered: the driver destroys the socket itself, before
      // the server could expire the session and hang up (a session timeout after the last request).
      await eventually('the socket closed', () => rewriter.connections === 0, session.timeoutMs * 0.9);
      // The session never heard the close: the server expires it, and its entry goes with it.
      await eventually(
        'the server expired the session',
        async () => (await scope.fixture.entries(scope.namespace)).length === 0,
        scope.fixture.lossDeadlineMs,
      );
    });
  });

  // What a server that does not know CREATE2 (ZooKeeper 3.4) might answer: the header alone. The server
  // here did create the entry; the session's next listing of the queue sweeps it as its own orphan.
  it("a create answered without the entry's stat fails that acquire with BackendError (ZooKeeper 3.5 or later needed) and nothing else", async () => {
    await throughRewriter(async (session, rewriter) => {
      // The lock's directory exists first, so that the create whose reply is stripped is applied.
      await (await new FairMutex(session, 'bare').acquire({ timeoutMs: 5_000 })).release();
      const answered = rewriter.answerNext(ZkOp.create2, `/${scope.namespace}/bare/`, 0, { bare: true });
      const failed = await new FairMutex(session, 'bare').acquire({ timeoutMs: 5_000 }).then(
        () => undefined,
        (error: unknown) => error,
      );
      await answered;
      expect(failed).toBeInstanceOf(BackendError);
      expect(String(failed)).toMatch(/ZooKeeper 3\.5 or later/);
      // The create was applied although its reply could not be read: the entry is gone before the acquire rejects.
      expect(await scope.fixture.entries(scope.namespace), 'the entry of the unreadable create').toEqual([]);
      expect(session.state).toBe('connected');
      const lock = await new FairMutex(session, 'bare').acquire({ timeoutMs: 5_000 });
      expect((await backendOf(session).list('bare')).map((entry) => entry.key)).toEqual([entryOf(lock).key]);
      await lock.release();
    });
  });

  // SESSION_MOVED, which ZooKeeper 3.8 does not send (it closes the connection instead), and a code that
  // does not exist at all.
  for (const code of [ZkServerCode.SESSION_MOVED, -999]) {
    it(`a reply with a code the client library does not know (${code}) fails that request with BackendError (code kept) and nothing else`, async () => {
      await throughRewriter(async (session, rewriter) => {
        const held = await new FairMutex(session, 'odd').acquire();
        const answered = rewriter.answerNext(ZkOp.getChildren2, `/${scope.namespace}/odd`, code);
        const failed = await backendOf(session)
          .list('odd')
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        await answered;
        expect(failed).toBeInstanceOf(BackendError);
        expect(zkCode(failed)).toBe(code);
        expect(session.state).toBe('connected');
        expect((await backendOf(session).list('odd')).map((entry) => entry.key)).toEqual([entryOf(held).key]);
        expect(held.signal.aborted).toBe(false);
        await held.release();
      });
    });
  }
});
