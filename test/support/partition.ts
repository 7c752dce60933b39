import { expect } from 'vitest';
import { LockLostError, SessionLostError } from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import { connect, type ConnectOptions } from '../../src/connect.js';
import type { BatonSession } from '../../src/session.js';
import { TcpProxy } from '../harness/proxy.js';

export interface PartitionSetup {
  /** The server port the proxy forwards to. */
  readonly port: number;
  /** The URL for a session through the proxy at `address`. */
  url(address: string): string;
  readonly options: ConnectOptions;
  /** A session that is not partitioned (closed by the test scope). */
  open(): Promise<BatonSession>;
  /** Bound for the next holder's wait: several session timeouts. */
  readonly waitMs: number;
}

/**
 * Partitions a holder from its server (proxy blackhole) while another session waits, `trials` times.
 * Checks in every trial that the holder's signal aborted with LockLostError (cause SessionLostError)
 * strictly before the waiter was granted; returns the gaps in milliseconds.
 */
export async function partitionTrials(setup: PartitionSetup, trials: number): Promise<number[]> {
  const gaps: number[] = [];
  for (let trial = 0; trial < trials; trial += 1) {
    const proxy = await TcpProxy.start({ port: setup.port });
    const cutOff = await connect(setup.url(proxy.address), setup.options);
    const other = await setup.open();
    try {
      const held = await new FairMutex(cutOff, 'partition').acquire();
      let abortedAt = Number.NaN;
      held.signal.addEventListener('abort', () => (abortedAt = performance.now()), { once: true });
      const next = new FairMutex(other, 'partition').acquire({ timeoutMs: setup.waitMs }).then((lock) => ({ lock, grantedAt: performance.now() }));
      proxy.blackhole();
      const { lock, grantedAt } = await next;
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect((held.signal.reason as LockLostError).cause).toBeInstanceOf(SessionLostError);
      expect(cutOff.state).toBe('lost');
      expect(abortedAt).toBeLessThan(grantedAt);
      gaps.push(grantedAt - abortedAt);
      await lock.release();
    } finally {
      await cutOff.close();
      await proxy.close();
    }
  }
  return gaps;
}
