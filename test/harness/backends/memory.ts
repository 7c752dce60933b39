import { expireMemorySession } from 'baton-locks/testing';

import { memoryGuardedKeysUnder } from '../../../src/backends/memory/guarded.js';
import { memoryStore } from '../../../src/backends/memory/store.js';
import type { Fixture } from './fixture.js';

const STORE = 'contract';

export function memoryFixture(): Fixture {
  const store = memoryStore(STORE);
  return {
    name: 'memory',
    url: (namespace) => `memory://${STORE}/${namespace}`,
    options: {},
    // Guarded values too: they outlive their writer, so one left behind is a leak the tests must see.
    entries: async (namespace) => [...store.keysUnder(namespace), ...memoryGuardedKeysUnder(store, namespace)],
    watched: async (namespace) => store.watchedUnder(namespace),
    notifications: () => store.notificationsSent,
    expire: async (session) => expireMemorySession(session),
    removeEntry: async (key) => store.remove(key),
    cleanup: async () => undefined,
    liveSessions: async () => [],
    crossProcess: false,
    lossDeadlineMs: 1_000,
  };
}
