import type { IRangeResponse } from 'etcd3';

import type { Enqueued, Entry } from '../../../recipes/contract.js';
import { BackendError, LockDowngradeError, PermitsMismatchError } from '../../../recipes/errors.js';
import { askOf } from '../../../recipes/permits.js';
import type { DriverCore } from '../core.js';
import { outOfSpace } from './failures.js';
import type { KeepAliveHost } from './keepalive.js';
import { clientOf, entryKey, EtcdEntry, queuePrefix, type StoredKey } from './keys.js';
import type { OwnEntries } from './own-entries.js';
import type { EtcdCounters } from './probe.js';

/**
 * What the enqueue needs of its driver: the lease (its hex `id` begins every key of ours after its
 * queue's prefix) and the unary requests as the lease has them, and the driver's queue reads.
 */
export interface EnqueuerHost extends Pick<KeepAliveHost, 'client' | 'lease' | 'id' | 'rpc' | 'attempt'> {
  readonly namespace: string;
  readonly core: DriverCore;
  readonly counters: EtcdCounters;
  readonly own: OwnEntries;
  /** The keys-only read of a queue's range. */
  queueRange(prefix: string): { key: Buffer; range_end: Buffer; keys_only: true };
  /** The entries of a queue's keys, with our orphans among them deleted and foreign keys reported. */
  parseAndSweep(queue: string, prefix: string, kvs: readonly StoredKey[]): Entry[];
  withdraw(entry: Entry): Promise<void>;
}

/**
 * The enqueue: one Txn that puts our key with the lease when it is absent and reads the queue in the
 * same request, the adoption of a key an attempt whose reply was lost wrote, and the refusal of a
 * downgrade a Go waiter overtook.
 */
export class Enqueuer {
  readonly #host: EnqueuerHost;

  constructor(host: EnqueuerHost) {
    this.#host = host;
  }

  enqueue(queue: string, kind: string, at?: Entry, data?: string): Promise<Enqueued> {
    // Without an async frame of its own on the common path (no `at`): an acquire's first request.
    if (at === undefined) return this.#put(queue, kind, undefined, data);
    return this.#put(queue, kind, at, data).then(async (enqueued) => {
      await this.#refuseOvertakenDowngrade(queue, enqueued, at);
      return enqueued;
    });
  }

  /** Puts an entry of ours into the queue, safe against a lost reply (see `enqueue`). */
  async #put(queue: string, kind: string, at: Entry | undefined, data: string | undefined): Promise<Enqueued> {
    const host = this.#host;
    const prefix = queuePrefix(host.namespace, queue);
    const own = host.own;
    const slot = own.slots.take(queue);
    const keyText = entryKey(prefix, host.id, slot, kind, at?.order);
    const key = Buffer.from(keyText);
    const range = host.queueRange(prefix);
    let attempts = 0;
    own.enqueuing.add(keyText);
    try {
      // One request: put our key with the lease if it is absent, and read the queue as it then stands.
      // A retry after a lost reply finds the key it wrote (the failure branch) instead of adding another.
      const response = await host.core.retry(
        host.rpc(() => {
          attempts += 1;
          return host.client.kv.txn(
            {
              compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
              success: [
                { request_put: { key, value: data === undefined ? EMPTY : Buffer.from(data), lease: host.lease } },
                { request_range: range },
              ],
              failure: [{ request_range: { key } }, { request_range: range }],
            },
            host.attempt(),
          );
        }),
      );
      if (!response.succeeded) this.#adopt(key, response.responses[0]?.response_range);
      const entries = host.parseAndSweep(queue, prefix, response.responses[1]?.response_range.kvs ?? []);
      const entry = entries.find((e) => e.key === keyText);
      if (entry === undefined) throw new BackendError(`wrote ${keyText} but the queue read does not show it`);
      own.live.set(entry.key, EtcdEntry.createdAt(entry));
      if (attempts > 1) {
        // A copy of an earlier attempt may still be applied after this entry is released: the key is
        // treated like one with a delete of unknown fate, so its slot is never used again (a later
        // enqueue would otherwise adopt that copy while an orphan removal of it is on its way).
        own.doubtful.add(entry.key);
        own.unsettle(queue);
      }
      return { entry, queue: entries };
    } catch (error) {
      // The key may exist or appear later: its slot is retired (never adopted by a later enqueue), and
      // the queue is looked at until any late attempt must have been applied. Not after a single
      // attempt refused for lack of space: etcd refuses that before applying anything.
      if (attempts > 1 || (attempts === 1 && !outOfSpace(error instanceof BackendError ? error.cause : error)))
        own.unsettle(queue);
      else own.slots.free(queue, slot);
      throw error;
    } finally {
      own.enqueuing.delete(keyText);
    }
  }

  /** The failure branch of an enqueue's Txn: our key exists already, written by an attempt whose reply was lost. */
  #adopt(key: Buffer, found: IRangeResponse | undefined): void {
    const kv = found?.kvs[0];
    if (kv === undefined || kv.lease !== this.#host.lease)
      throw new BackendError(`${key.toString()} exists but does not belong to lease ${this.#host.id}`);
    this.#host.counters.adopted += 1;
  }

  /**
   * A downgrade's read key is created after the writer's, so a Go waiter (which waits only for the
   * keys created before its own) that queued between the two would not wait for the read: it would be
   * granted as soon as the write key goes. Such a read is withdrawn and the downgrade refused; the
   * writer keeps its lock. A Go key created after the read waits for it, so one check suffices.
   */
  async #refuseOvertakenDowngrade(queue: string, { entry: read, queue: entries }: Enqueued, at: Entry): Promise<void> {
    const prefix = queuePrefix(this.#host.namespace, queue);
    const createdAt = EtcdEntry.createdAt(read);
    const peer = entries.find(
      (e) => e.order > at.order && e.order < createdAt && clientOf(prefix, e.key) === 'etcd-go',
    );
    if (peer === undefined) return;
    await this.#host.withdraw(read);
    // A semaphore moves its entry so too (announcing its grant): a Go lock's key on its name is another recipe's.
    const ask = askOf(read.kind);
    if (ask !== null) throw new PermitsMismatchError(`semaphore "${queue}"`, ask.permits, peer.kind);
    const why = `a client that does not see baton's read entries (etcd's Go recipes, key ${peer.key}) queued behind the write lock`;
    throw new LockDowngradeError(`read/write lock "${queue}"`, why);
  }
}

/** The value of an entry without data (never written to). */
const EMPTY = Buffer.alloc(0);
