import { expireMemorySession } from 'baton-locks/testing';
import { connect } from 'baton-locks/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { Session } from '../../recipes/contract.js';
import { LeaderElection } from '../../recipes/election.js';
import type { LockEvent } from '../../recipes/events.js';
import { FairMutex } from '../../recipes/mutex.js';
import { Reentrant } from '../../recipes/reentrant.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { backendOf } from '../harness/internals.js';

/**
 * What lock events cost when nobody listens, and what a listener that throws may break, on the memory
 * backend (the reporting is the recipes' own, the same on every backend).
 */

let sessions: Session[] = [];
let store = 0;

async function open(): Promise<Session> {
  const session = await connect(`memory://events-${store}/ns`);
  sessions.push(session);
  return session;
}

beforeEach(() => {
  store += 1;
  sessions = [];
});
afterEach(async () => {
  await Promise.allSettled(sessions.map((session) => session.close()));
});

/** Counts the clock readings made by recipe code (directly or through the session it calls). */
async function clockReads(run: () => Promise<void>): Promise<number> {
  const now = performance.now;
  let reads = 0;
  performance.now = (): number => {
    if ((new Error().stack ?? '').includes('/recipes/')) reads += 1;
    return now.call(performance);
  };
  try {
    await run();
  } finally {
    performance.now = now;
  }
  return reads;
}

type Scenario = (a: Session, b: Session) => Promise<void>;

/**
 * Each scenario with the clock readings the recipes made before lock events existed (measured on the
 * commit before them): the start of a wait, the time left of its deadline, and the session's deadline
 * check at every grant and `held` read.
 */
const scenarios: [string, number, Scenario][] = [
  ['acquire and release', 2, async (a) => (await new FairMutex(a, 'm').acquire()).release()],
  ['tryAcquire and release', 1, async (a) => (await new FairMutex(a, 'm').tryAcquire())!.release()],
  [
    'tryAcquire of a taken lock',
    2,
    async (a, b) => {
      const held = await new FairMutex(a, 'm').acquire();
      await new FairMutex(b, 'm').tryAcquire();
      await held.release();
    },
  ],
  [
    'a wait that times out',
    4,
    async (a, b) => {
      const held = await new FairMutex(a, 'm').acquire();
      await new FairMutex(b, 'm').acquire({ timeoutMs: 20 }).catch(() => undefined);
      await held.release();
    },
  ],
  [
    'a wait that is granted',
    4,
    async (a, b) => {
      const held = await new FairMutex(a, 'm').acquire();
      const waiting = new FairMutex(b, 'm').acquire();
      await new Promise((resolve) => setTimeout(resolve, 10));
      await held.release();
      await (await waiting).release();
    },
  ],
  [
    'a downgrade',
    6,
    async (a) => {
      const rw = new ReadWriteLock(a, 'rw');
      await (await rw.downgrade(await rw.writeLock.acquire())).release();
    },
  ],
  [
    'a reentrant hold, re-entered',
    3,
    async (a) => {
      const re = new Reentrant(new FairMutex(a, 're'));
      await re.withLock(() => re.withLock(() => undefined));
    },
  ],
  ['an election', 2, async (a) => (await new LeaderElection(a, 'e', { id: 'a' }).campaign()).resign()],
  [
    'a hold lost with its session',
    2,
    async (a) => {
      const held = await new FairMutex(a, 'm').acquire();
      expireMemorySession(a);
      await held.release();
    },
  ],
];

describe('lock events when nobody listens', () => {
  it.each(scenarios)('%s reads the clock as often as before events existed (%i times)', async (_, before, scenario) => {
    const [a, b] = [await open(), await open()];
    expect(await clockReads(() => scenario(a, b))).toBe(before);
  });

  it.each(scenarios)(
    '%s reads the clock more often with a listener (the count sees the reporting)',
    async (_, before, scenario) => {
      const [a, b] = [await open(), await open()];
      for (const session of [a, b]) session.on('lock', () => undefined);
      expect(await clockReads(() => scenario(a, b))).toBeGreaterThan(before);
    },
  );
});

describe('the end of a hold', () => {
  it('a loss while the holder is already releasing is told as released, once', async () => {
    const session = await open();
    const heard: LockEvent['type'][] = [];
    session.on('lock', (event) => void heard.push(event.type));
    const lock = await new FairMutex(session, 'm').acquire();
    const releasing = lock.release();
    expireMemorySession(session);
    await releasing;
    expect(lock.signal.aborted).toBe(true);
    expect(heard).toEqual(['requested', 'granted', 'released']);
  });
});

describe('a lock listener that throws', () => {
  it('breaks no lock operation and no other listener; its error is rethrown as an uncaught exception', async () => {
    const session = await open();
    const failure = new Error('listener bug');
    const heard: LockEvent['type'][] = [];
    session.on('lock', () => {
      throw failure;
    });
    session.on('lock', (event) => void heard.push(event.type));
    const uncaught: unknown[] = [];
    const previous = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    process.on('uncaughtException', (error) => void uncaught.push(error));
    try {
      const lock = await new FairMutex(session, 'm').acquire();
      await lock.release();
      expect(lock.held).toBe(false);
      expect(await backendOf(session).list('m')).toEqual([]);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.removeAllListeners('uncaughtException');
      for (const listener of previous) process.on('uncaughtException', listener);
    }
    expect(heard).toEqual(['requested', 'granted', 'released']);
    expect(uncaught).toEqual([failure, failure, failure]);
  });
});

describe('a state listener that throws', () => {
  it('breaks no transition and no other listener; its error is rethrown as an uncaught exception', async () => {
    const session = await open();
    const lock = await new FairMutex(session, 'm').acquire();
    const failure = new Error('state listener bug');
    const heard: string[] = [];
    const buggy = (): void => {
      throw failure;
    };
    session.on('state', buggy);
    session.on('state', (state) => void heard.push(state));
    const uncaught: unknown[] = [];
    const previous = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    process.on('uncaughtException', (error) => void uncaught.push(error));
    try {
      // The backend reports the loss; the listener's error must not reach it.
      expect(() => expireMemorySession(session)).not.toThrow();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      session.off('state', buggy); // the session's close after the test changes its state again
      process.removeAllListeners('uncaughtException');
      for (const listener of previous) process.on('uncaughtException', listener);
    }
    expect(session.state).toBe('lost');
    expect(lock.signal.aborted).toBe(true);
    expect(heard).toEqual(['lost']);
    expect(uncaught).toEqual([failure]);
  });
});
