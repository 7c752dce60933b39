import { expireMemorySession } from 'baton-locks/testing';

import { memoryStore } from '../../../src/backends/memory/store.js';
import type { Fixture } from './fixture.js';

const STORE = 'contract';

export function memoryFixture(): Fixture {
  const store = memoryStore(STORE);
  return {
    name: 'memory',
    url: (namespace) => `memory://${STORE}/${namespace}`,
    options: {},
    entries: async (namespace) => store.keysUnder(namespace),
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
