// Loaded first, as a user's own import would be: everything reachable from here is recorded before
// baton is loaded, and must be the same after baton has run next to a client of the user's.
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import zookeeper from 'node-zookeeper-client';
import { describe, expect, inject, it } from 'vitest';

const require = createRequire(import.meta.url);
const LIB = join(dirname(require.resolve('node-zookeeper-client/package.json')), 'lib');
/** Every module of the client. */
const MODULES = [
  'node-zookeeper-client',
  ...readdirSync(LIB, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.js'))
    .map((file) => join(LIB, file)),
];
/** Where the walk stops: objects every module reaches, that are not the client's. */
const BEYOND = new Set<unknown>([Object.prototype, Function.prototype, globalThis, process]);

/**
 * Every value another importer of node-zookeeper-client can reach, by where it is found: from each of
 * its modules' exports, every own property (a getter's and a setter's functions for an accessor) and
 * every prototype, as deep as they go.
 */
function reachable(): Map<string, unknown> {
  const found = new Map<string, unknown>();
  const seen = new WeakSet<object>();
  const visit = (where: string, value: unknown): void => {
    found.set(where, value);
    if (
      value === null ||
      (typeof value !== 'object' && typeof value !== 'function') ||
      BEYOND.has(value) ||
      seen.has(value)
    )
      return;
    seen.add(value);
    for (const key of Reflect.ownKeys(value)) {
      if (key === 'caller' || key === 'callee' || key === 'arguments') continue;
      const descriptor = Object.getOwnPropertyDescriptor(value, key)!;
      if ('value' in descriptor) visit(`${where}.${String(key)}`, descriptor.value);
      else {
        visit(`${where}.${String(key)}[get]`, descriptor.get);
        visit(`${where}.${String(key)}[set]`, descriptor.set);
      }
    }
    visit(`${where}[[Prototype]]`, Object.getPrototypeOf(value));
  };
  for (const name of MODULES) visit(name, require(name));
  return found;
}

describe('node-zookeeper-client is left as it is for everyone else in the process', () => {
  it('baton running locks, a read/write lock, an election and a lost session changes nothing a user of the client can reach', async () => {
    const before = reachable();
    expect(before.size).toBeGreaterThan(1_000);
    const { connectString, sessionTimeoutMs } = inject('zkStandalone');
    const { connect, FairMutex, ReadWriteLock, LeaderElection } = await import('../../../src/index.js');
    // The session expired from a second connection needs its credentials: the testing connect shows them.
    const { connect: connectForTests } = await import('baton-locks/testing');
    const { expireZkSession } = await import('../../harness/backends/zookeeper.js');
    const { eventually } = await import('../../harness/wait.js');
    const namespace = `untouched-${process.pid}`;

    // The user's own client, working next to baton throughout.
    const user = zookeeper.createClient(connectString, { sessionTimeout: sessionTimeoutMs });
    await new Promise<void>((resolve) => {
      user.once('connected', () => resolve());
      user.connect();
    });
    const call = <T>(run: (done: (error: unknown, value?: T) => void) => void): Promise<T> =>
      new Promise((resolve, reject) => run((error, value) => (error ? reject(error) : resolve(value as T))));
    try {
      const session = await connect(`zk://${connectString}/${namespace}`, { sessionTimeoutMs });
      const other = await connectForTests(`zk://${connectString}/${namespace}`, { sessionTimeoutMs });
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
      const path = await call<string>((done) =>
        user.create(`/${namespace}-user`, Buffer.from('x'), zookeeper.CreateMode.EPHEMERAL, done),
      );
      expect((await call<Buffer>((done) => user.getData(path, done))).toString()).toBe('x');
      expect(await call<string[]>((done) => user.getChildren(`/${namespace}`, done))).toEqual(
        expect.arrayContaining(['jobs', 'config', 'leader']),
      );
      await expect(call((done) => user.getData(`/${namespace}/nothing`, done))).rejects.toMatchObject({
        code: zookeeper.Exception.NO_NODE,
      });
      await call((done) => user.remove(path, -1, done));
      for (const child of await call<string[]>((done) => user.getChildren(`/${namespace}`, done)))
        await call((done) => user.remove(`/${namespace}/${child}`, -1, done));
      await call((done) => user.remove(`/${namespace}`, -1, done));
    } finally {
      user.close();
    }
    const after = reachable();
    const changed = [...new Set([...before.keys(), ...after.keys()])].filter(
      (where) => !Object.is(before.get(where), after.get(where)),
    );
    expect(changed).toEqual([]);
    // And the user's own client was not touched either: its connection manager has only its own state.
    const manager = (user as unknown as { connectionManager: object }).connectionManager;
    for (const method of ['onSocketData', 'connect', 'onSocketConnected', 'queue'])
      expect(Object.hasOwn(manager, method), method).toBe(false);
  });
});
