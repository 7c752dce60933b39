// Loaded first, as a user's own import would be: everything reachable from here is recorded before
// baton is loaded, and must be the same after baton has run next to a client of the user's.
import zookeeper from 'node-zookeeper-client';
import { createRequire } from 'node:module';
import { describe, expect, inject, it } from 'vitest';

const require = createRequire(import.meta.url);
const MODULES = ['node-zookeeper-client', 'node-zookeeper-client/lib/jute/index.js', 'node-zookeeper-client/lib/ConnectionManager.js', 'node-zookeeper-client/lib/Exception.js', 'node-zookeeper-client/lib/Path.js'];

/**
 * Every value another importer of node-zookeeper-client can reach, by where it is found: each module's
 * exports, and for each function among them (the classes) its own properties and its prototype's, one
 * level into nested objects such as `jute.protocol`.
 */
function reachable(): Map<string, unknown> {
  const found = new Map<string, unknown>();
  const visit = (where: string, value: unknown, depth: number): void => {
    found.set(where, value);
    if (depth === 0 || value === null || (typeof value !== 'object' && typeof value !== 'function')) return;
    for (const key of Reflect.ownKeys(value as object)) {
      if (key === 'caller' || key === 'callee' || key === 'arguments') continue;
      const descriptor = Object.getOwnPropertyDescriptor(value, key)!;
      visit(`${where}.${String(key)}`, descriptor.value ?? descriptor.get, depth - 1);
    }
    if (typeof value === 'function' && value.prototype !== undefined) visit(`${where}#prototype`, value.prototype, depth - 1);
  };
  for (const name of MODULES) visit(name, require(name), 4);
  return found;
}

describe('node-zookeeper-client is left as it is for everyone else in the process', () => {
  it('baton running locks, a read/write lock, an election and a lost session changes nothing a user of the client can reach', async () => {
    const before = reachable();
    expect(before.size).toBeGreaterThan(200);
    const { connectString, sessionTimeoutMs } = inject('zkStandalone');
    const { connect, FairMutex, ReadWriteLock, LeaderElection } = await import('../../src/index.js');
    const { expireZkSession } = await import('../support/zookeeper.js');
    const { eventually } = await import('../support/wait.js');
    const namespace = `untouched-${process.pid}`;

    // The user's own client, working next to baton throughout.
    const user = zookeeper.createClient(connectString, { sessionTimeout: sessionTimeoutMs });
    await new Promise<void>((resolve) => {
      user.once('connected', () => resolve());
      user.connect();
    });
    const call = <T,>(run: (done: (error: unknown, value?: T) => void) => void): Promise<T> =>
      new Promise((resolve, reject) => run((error, value) => (error ? reject(error) : resolve(value as T))));
    try {
      const session = await connect(`zk://${connectString}/${namespace}`, { sessionTimeoutMs });
      const other = await connect(`zk://${connectString}/${namespace}`, { sessionTimeoutMs });
      await (await new FairMutex(session, 'jobs').acquire()).release();
      const rw = new ReadWriteLock(session, 'config');
      const read = await rw.downgrade(await rw.writeLock.acquire());
      await read.release();
      const leadership = await new LeaderElection(session, 'leader', { id: 'a' }).campaign();
      expect(await new LeaderElection(other, 'leader', { id: 'b' }).leader()).toBe('a');
      await leadership.resign();
      const held = await new FairMutex(other, 'jobs').acquire();
      await expireZkSession(inject('zkStandalone'), other);
      await eventually('the holder told of its lost session', () => held.signal.aborted, sessionTimeoutMs * 3);
      await session.close();
      await other.close().catch(() => undefined);

      // The user's client still reads and writes as it always did.
      const path = await call<string>((done) => user.create(`/${namespace}-user`, Buffer.from('x'), zookeeper.CreateMode.EPHEMERAL, done));
      expect((await call<Buffer>((done) => user.getData(path, done))).toString()).toBe('x');
      expect(await call<string[]>((done) => user.getChildren(`/${namespace}`, done))).toEqual(expect.arrayContaining(['jobs', 'config', 'leader']));
      await expect(call((done) => user.getData(`/${namespace}/nothing`, done))).rejects.toMatchObject({ code: zookeeper.Exception.NO_NODE });
      await call((done) => user.remove(path, -1, done));
      for (const child of await call<string[]>((done) => user.getChildren(`/${namespace}`, done))) await call((done) => user.remove(`/${namespace}/${child}`, -1, done));
      await call((done) => user.remove(`/${namespace}`, -1, done));
    } finally {
      user.close();
    }
    const after = reachable();
    const changed = [...new Set([...before.keys(), ...after.keys()])].filter((where) => before.get(where) !== after.get(where));
    expect(changed).toEqual([]);
  });
});
