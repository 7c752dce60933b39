import { createRequire } from 'node:module';

import { Redis } from 'ioredis';

/**
 * The Redis lock libraries baton is measured against, loaded as they are published: `redlock` 4 (the
 * algorithm over one instance here) and `redis-semaphore`'s Mutex. Both poll: a waiter tries again
 * after a delay until the key is free. Neither is a dependency of baton; both are dev dependencies
 * of the benchmarks only.
 */
export interface PeerLock {
  acquire(): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);

interface RedlockLock {
  unlock(): Promise<void>;
}
interface Redlock {
  lock(resource: string, ttlMs: number): Promise<RedlockLock>;
}

/** redlock 4 on one instance: 10 ms between attempts (its default is 200 ms), up to 5 ms jitter, no retry limit. */
export function redlockPeer(url: string, resource: string, retryDelayMs = 10): PeerLock {
  const client = new Redis(url);
  client.on('error', () => undefined);
  const RedlockClass = require('redlock') as new (clients: Redis[], options: object) => Redlock;
  const redlock = new RedlockClass([client], {
    retryCount: -1,
    retryDelay: retryDelayMs,
    retryJitter: 5,
    driftFactor: 0.01,
  });
  return {
    acquire: async () => {
      const lock = await redlock.lock(resource, 10_000);
      return () => lock.unlock();
    },
    close: async () => void client.disconnect(),
  };
}

interface SemaphoreMutex {
  acquire(): Promise<void>;
  release(): Promise<void>;
}

/** redis-semaphore's Mutex: retries every 10 ms (its default), no refresh timer (the holds are short). */
export function redisSemaphorePeer(url: string, resource: string): PeerLock {
  const client = new Redis(url);
  client.on('error', () => undefined);
  const { Mutex } = require('redis-semaphore') as {
    Mutex: new (client: Redis, key: string, options: object) => SemaphoreMutex;
  };
  return {
    acquire: async () => {
      const mutex = new Mutex(client, resource, {
        lockTimeout: 10_000,
        acquireTimeout: 60_000,
        retryInterval: 10,
        refreshInterval: 0,
      });
      await mutex.acquire();
      return () => mutex.release();
    },
    close: async () => void client.disconnect(),
  };
}

/** Whether the peers load here. */
export function peersInstalled(): { redlock: boolean; redisSemaphore: boolean } {
  const loads = (name: string): boolean => {
    try {
      require.resolve(name);
      return true;
    } catch {
      return false;
    }
  };
  return { redlock: loads('redlock'), redisSemaphore: loads('redis-semaphore') };
}
