import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../recipes/contract.js';
import { ClosedError } from '../../recipes/errors.js';
import { useScope } from '../support/scope.js';
import { eventually } from '../support/wait.js';
import { zkFixture } from '../support/zookeeper.js';

function listWhenGone(backend: Backend): NonNullable<Backend['listWhenGone']> {
  expect(backend.listWhenGone).toBeTypeOf('function');
  return backend.listWhenGone!.bind(backend);
}

/**
 * Runs `during` while counting the listings of `dir` the client writes, and of those, the ones
 * written while it was still reading the server's data (from a watch's callback, not after it).
 */
async function countListings<T>(dir: string, during: () => Promise<T>): Promise<{ result: T; listings: number; fromCallback: number }> {
  const path = Buffer.from(dir);
  let reading = 0;
  let listings = 0;
  let fromCallback = 0;
  const hadOwnEmit = Object.prototype.hasOwnProperty.call(Socket.prototype, 'emit');
  const emit = Socket.prototype.emit;
  const write = Socket.prototype.write;
  const emitting = emit as (this: Socket, event: string | symbol, ...args: unknown[]) => boolean;
  Socket.prototype.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event !== 'data') return emitting.call(this, event, ...args);
    reading += 1;
    try {
      return emitting.call(this, event, ...args);
    } finally {
      reading -= 1;
    }
  };
  Socket.prototype.write = function (this: Socket, chunk: unknown, ...rest: unknown[]): boolean {
    // A listing is the only request these tests send that ends with the directory's path and a false watch flag.
    if (Buffer.isBuffer(chunk) && chunk.length > path.length && chunk.subarray(chunk.length - path.length - 1, chunk.length - 1).equals(path)) {
      listings += 1;
      if (reading > 0) fromCallback += 1;
    }
    return (write as (this: Socket, ...args: unknown[]) => boolean).call(this, chunk, ...rest);
  };
  try {
    const result = await during();
    return { result, listings, fromCallback };
  } finally {
    if (hadOwnEmit) Socket.prototype.emit = emit;
    else delete (Socket.prototype as { emit?: unknown }).emit;
    Socket.prototype.write = write;
  }
}

describe('ZooKeeper: the listing that follows a blocker\'s deletion', () => {
  const scope = useScope(() => zkFixture('zkStandalone'));

  it('is sent from the deletion\'s notification and lists the queue through the waiter\'s own entry', async () => {
    const holder = await scope.open();
    const waiter = await scope.open();
    const { entry: blocker } = await holder.backend.enqueue('q', 'lock');
    const { entry: self } = await waiter.backend.enqueue('q', 'lock');
    const { entry: behind } = await holder.backend.enqueue('q', 'lock');
    const dir = `/${scope.namespace}/q`;
    const { result, listings, fromCallback } = await countListings(dir, async () => {
      const listed = listWhenGone(waiter.backend)(blocker, 'q', self, new AbortController().signal);
      // The watch first: deleted before it, the blocker would be found gone by the read that sets it.
      await eventually('the watch on the blocker', async () => (await scope.fixture.watched(scope.namespace)).includes(blocker.key));
      await holder.backend.withdraw(blocker);
      return listed;
    });
    // The entry queued behind was never parsed by the waiter's session: left out, as `through` allows.
    expect(result.map((entry) => entry.key)).toEqual([self.key]);
    expect({ listings, fromCallback }).toEqual({ listings: 1, fromCallback: 1 });
    await holder.backend.withdraw(behind);
    expect((await waiter.backend.list('q')).map((entry) => entry.key)).toEqual([self.key]);
    await waiter.backend.withdraw(self);
  });

  it('lists at once when the blocker is gone already', async () => {
    const holder = await scope.open();
    const waiter = await scope.open();
    const { entry: blocker } = await holder.backend.enqueue('gone', 'lock');
    const { entry: self } = await waiter.backend.enqueue('gone', 'lock');
    await holder.backend.withdraw(blocker);
    const listed = await listWhenGone(waiter.backend)(blocker, 'gone', self, new AbortController().signal);
    expect(listed.map((entry) => entry.key)).toEqual([self.key]);
    await waiter.backend.withdraw(self);
  });

  it('a waiter that gave up before the deletion is withdrawn: no listing is sent for it', async () => {
    const holder = await scope.open();
    const waiter = await scope.open();
    const { entry: blocker } = await holder.backend.enqueue('abort', 'lock');
    const { entry: self } = await waiter.backend.enqueue('abort', 'lock');
    const dir = `/${scope.namespace}/abort`;
    const gaveUp = new AbortController();
    const reason = new Error('gave up');
    const abandoned = listWhenGone(waiter.backend)(blocker, 'abort', self, gaveUp.signal);
    gaveUp.abort(reason);
    await expect(abandoned).rejects.toBe(reason);
    expect(() => listWhenGone(waiter.backend)(blocker, 'abort', self, gaveUp.signal)).toThrow(reason);
    const { result, listings } = await countListings(dir, async () => {
      const staying = listWhenGone(waiter.backend)(blocker, 'abort', self, new AbortController().signal);
      await holder.backend.withdraw(blocker);
      return staying;
    });
    expect(result.map((entry) => entry.key)).toEqual([self.key]);
    expect(listings).toBe(1); // the remaining waiter's alone
    await waiter.backend.withdraw(self);
  });

  it('every waiter woken by one deletion gets a listing through its own entry', async () => {
    const holder = await scope.open();
    const waiter = await scope.open();
    const { entry: blocker } = await holder.backend.enqueue('shared', 'write');
    const { entry: first } = await waiter.backend.enqueue('shared', 'read');
    const { entry: second } = await waiter.backend.enqueue('shared', 'read');
    const signal = new AbortController().signal;
    const wake = listWhenGone(waiter.backend);
    const listed = Promise.all([wake(blocker, 'shared', first, signal), wake(blocker, 'shared', second, signal)]);
    await holder.backend.withdraw(blocker);
    // Each from its own listing sent after the deletion; what lies behind an entry may be left out.
    const [throughFirst, throughSecond] = (await listed).map((entries) => entries.map((entry) => entry.key));
    expect(throughFirst![0]).toBe(first.key);
    expect(throughFirst).not.toContain(blocker.key);
    expect(throughSecond).toEqual([first.key, second.key]);
    await waiter.backend.withdraw(first);
    await waiter.backend.withdraw(second);
  });

  it('the session\'s end fails a waiter that is still waiting', async () => {
    const holder = await scope.open();
    const waiter = await scope.open();
    const { entry: blocker } = await holder.backend.enqueue('end', 'lock');
    const { entry: self } = await waiter.backend.enqueue('end', 'lock');
    const listed = listWhenGone(waiter.backend)(blocker, 'end', self, new AbortController().signal);
    const failed = expect(listed).rejects.toBeInstanceOf(ClosedError);
    await waiter.close();
    await failed;
    await holder.backend.withdraw(blocker);
  });
});
