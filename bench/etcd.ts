import { Etcd3 } from 'etcd3';
import { FairMutex } from '../recipes/mutex.js';
import { connect } from '../src/connect.js';
import { alternate, summarize, timed, type Summary } from './stats.js';

export interface EtcdCycleResult {
  readonly results: Summary[];
  /** Unary gRPC requests the server handled per cycle, by case (from its /metrics). */
  readonly rpcsPerCycle: Record<string, number>;
}

/** Sum of unary requests the server has handled, from etcd's Prometheus endpoint. */
async function unaryHandled(endpoint: string): Promise<number> {
  const text = await (await fetch(`${endpoint}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('grpc_server_handled_total{') && line.includes('grpc_type="unary"')) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** etcd uncontended acquire + release next to the raw one-Txn floor and to etcd3's own lock(). */
export async function benchEtcdCycle(endpoint: string, options: { blocks: number; perBlock: number }): Promise<EtcdCycleResult> {
  const client = new Etcd3({ hosts: [endpoint] });
  const session = await connect(`etcd://${endpoint.replace(/^https?:\/\//, '')}/bench`, { ttlSeconds: 10 });
  try {
    const lease = await client.leaseClient.leaseGrant({ TTL: 3600, ID: 0 }); // outlives the run; revoked at the end
    const key = Buffer.from('bench-raw/#/floor-0-lock');
    const range = { key: Buffer.from('bench-raw/#/'), range_end: Buffer.from('bench-raw/#0'), keys_only: true };
    const mutex = new FairMutex(session, 'cycle');
    const contenders: Record<string, () => Promise<void>> = {
      'raw floor (Txn put+range, delete)': async () => {
        await client.kv.txn({
          compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
          success: [{ request_put: { key, value: Buffer.alloc(0), lease: lease.ID } }, { request_range: range }],
          failure: [{ request_range: range }],
        });
        await client.kv.deleteRange({ key });
      },
      'baton FairMutex acquire+release': async () => {
        const lock = await mutex.acquire();
        await lock.release();
      },
      "etcd3's lock() acquire+release": async () => {
        const lock = await client.lock('bench-etcd3-lock').ttl(10).acquire();
        await lock.release();
      },
    };
    const blocks = Object.fromEntries(Object.entries(contenders).map(([name, cycle]) => [name, timed(cycle)]));
    const samples = await alternate(blocks, { ...options, warmup: 100 });
    const rpcsPerCycle: Record<string, number> = {};
    for (const [name, run] of Object.entries(contenders)) {
      const before = await unaryHandled(endpoint);
      for (let i = 0; i < 100; i += 1) await run();
      rpcsPerCycle[name] = ((await unaryHandled(endpoint)) - before) / 100; // /metrics itself is HTTP, not gRPC
    }
    await client.leaseClient.leaseRevoke({ ID: lease.ID });
    return { results: Object.entries(samples).map(([name, values]) => summarize(name, values)), rpcsPerCycle };
  } finally {
    await session.close();
    client.close();
  }
}
