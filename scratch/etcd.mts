import { Etcd3 } from 'etcd3';
import { startEtcd } from '../test/harness/etcd.js';
const etcd = await startEtcd({ size: 1 });
const client = new Etcd3({ hosts: etcd.endpoints });
try {
  const lease = await client.leaseClient.leaseGrant({ TTL: 5, ID: 0 });
  console.log('lease', lease);
  const key = Buffer.from('ns/q/#/abc-0-lock');
  const prefix = Buffer.from('ns/q/#/');
  const end = Buffer.from('ns/q/#0');
  const r = await client.kv.txn({
    compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
    success: [{ request_put: { key, value: Buffer.alloc(0), lease: lease.ID } }, { request_range: { key: prefix, range_end: end, keys_only: true, sort_target: 'Create', sort_order: 'Ascend' } }],
    failure: [{ request_range: { key: prefix, range_end: end, keys_only: true, sort_target: 'Create', sort_order: 'Ascend' } }],
  });
  console.log(JSON.stringify(r, (k, v) => (v && v.type === 'Buffer' ? Buffer.from(v.data).toString() : v), 1).slice(0, 1500));
  const stream = await client.leaseClient.leaseKeepAlive();
  stream.on('data', (d) => console.log('ka', d));
  stream.write({ ID: lease.ID });
  await new Promise((r) => setTimeout(r, 200));
  const w = await client.watch().key('ns/q/#/abc-0-lock').startRevision(r.header.revision).create();
  w.on('delete', (kv) => console.log('deleted', kv.key.toString(), kv.mod_revision));
  w.on('disconnected', () => console.log('w disconnected'));
  w.on('connected', () => console.log('w connected'));
  await client.kv.deleteRange({ key });
  await new Promise((r) => setTimeout(r, 200));
  await w.cancel();
  stream.end();
  await client.leaseClient.leaseRevoke({ ID: lease.ID });
  stream.write({ ID: lease.ID });
  await new Promise((r) => setTimeout(r, 200));
} catch (e) { console.error('ERR', e); } finally { client.close(); await etcd.stop(); }
