import { expect } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { LockLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { backendOf } from '../internals.js';
import type { TcpProxy } from '../servers/proxy.js';
import { eventually, later } from '../wait.js';

export interface VanishSetup {
  /** The waiter's session, connected through `proxy`, with the `onWaiterLost` policy under test. */
  readonly waiter: Session;
  readonly proxy: TcpProxy;
  readonly holder: Session;
  removeEntry(key: string): Promise<void>;
  /** How long a reconnect may take: a session timeout or a TTL. */
  readonly reconnectMs: number;
}

/**
 * A waiter's entry is deleted by an operator, then its connection drops. The waiter learns of it from
 * the confirmation after the reconnect, while the holder still holds (its blocker has not moved, so
 * nothing else would tell it): under 'fail' its acquire rejects; under 'requeue' it queues again behind
 * the holder and is granted when the holder releases.
 */
export async function waiterVanishesAcrossReconnect(setup: VanishSetup, policy: 'requeue' | 'fail'): Promise<void> {
  const { waiter, proxy, holder } = setup;
  const held = await new FairMutex(holder, 'vanish').acquire();
  const waiting = later(new FairMutex(waiter, 'vanish').acquire({ timeoutMs: setup.reconnectMs * 5 }));
  await eventually('waiter queued', async () => (await backendOf(holder).list('vanish')).length === 2);
  const [, deleted] = await backendOf(holder).list('vanish');
  await setup.removeEntry(deleted!.key);
  proxy.drop();
  if (policy === 'fail') {
    await expect(waiting).rejects.toBeInstanceOf(LockLostError);
    expect(held.held).toBe(true);
    await held.release();
    return;
  }
  await eventually(
    'queued again behind the holder',
    async () => {
      const queue = await backendOf(holder).list('vanish');
      return queue.length === 2 && queue[1]!.order > deleted!.order;
    },
    setup.reconnectMs * 2,
  );
  expect(held.held).toBe(true);
  await held.release();
  await (await waiting).release();
}
