import type { ILeaseTimeToLiveResponse, IRangeRequest, IRangeResponse } from 'etcd3';

import type { EntryInfo } from '../../driver-port.js';
import { clientOf, entriesFromRange, leaseHex, prefixEnd, queuePrefix } from './keys.js';

/** The requests `describeQueue` sends, each retried like every read. */
export interface DescribeRequests {
  range(request: IRangeRequest): Promise<IRangeResponse>;
  timeToLive(lease: string): Promise<ILeaseTimeToLiveResponse>;
}

/**
 * A queue for `baton inspect`: every key with its value (the listing reads keys only), and the time
 * to live of each owner's lease, asked once per lease however many entries it owns.
 */
export async function describeQueue(
  namespace: string,
  queue: string,
  requests: DescribeRequests,
): Promise<EntryInfo[]> {
  const prefix = queuePrefix(namespace, queue);
  const response = await requests.range({ key: Buffer.from(prefix), range_end: prefixEnd(prefix) });
  const values = new Map(response.kvs.map((kv) => [kv.key.toString(), kv]));
  const entries = entriesFromRange(queue, prefix, response.kvs);
  const leases = [...new Set(entries.map((entry) => values.get(entry.key)!.lease))];
  const ttls = new Map(
    await Promise.all(
      leases.map(async (lease) => {
        const { TTL } = await requests.timeToLive(lease);
        return [lease, Number(TTL)] as const;
      }),
    ),
  );
  return entries.map((entry) => {
    const kv = values.get(entry.key)!;
    const ttl = ttls.get(kv.lease) ?? -1;
    return {
      entry,
      owner: leaseHex(kv.lease),
      client: clientOf(prefix, entry.key),
      data: kv.value.toString(),
      ...(ttl >= 0 ? { expiresInMs: ttl * 1_000 } : {}),
    };
  });
}
