import { randomUUID } from 'node:crypto';

import { connect } from 'baton-locks/testing';
import zookeeper from 'node-zookeeper-client';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { AccessDeniedError, InvalidArgumentError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { aclFor } from '../../../src/backends/zookeeper/client.js';
import { type QueueView, runInspect } from '../../../src/inspect.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { withZkClient, zkRemoveTree, zkTree } from '../../harness/servers/clean.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually } from '../../harness/wait.js';

const TENANT_A = 'tenant-a:secret-of-a-7f3d';
const TENANT_B = 'tenant-b:secret-of-b-91c2';

/** The ZooKeeper error code of a raw client request, or 0 when it succeeded. */
function code(run: (callback: (error: unknown) => void) => void): Promise<number> {
  return new Promise((resolve) =>
    run((error) => resolve(error instanceof zookeeper.Exception ? error.getCode() : error ? -1 : 0)),
  );
}

describe('ZooKeeper ACLs and digest credentials', () => {
  const zk = () => inject('zkStandalone');
  let namespace = '';
  const sessions: Session[] = [];
  const texts: string[] = []; // every message and output a user could see, searched for credentials
  const open = async (options: Parameters<typeof connect>[1]): Promise<Session> => {
    const session = await connect(`zk://${zk().connectString}/${namespace}`, options);
    sessions.push(session);
    return session;
  };
  const inspect = async (name: string): Promise<QueueView> => {
    let out = '';
    await runInspect({
      url: `zk://${zk().connectString}/${namespace}`,
      name,
      json: true,
      watch: false,
      connectTimeoutMs: 5_000,
      write: (text) => (out += text),
    });
    texts.push(out);
    return JSON.parse(out) as QueueView;
  };
  const refusal = async (promise: Promise<unknown>): Promise<AccessDeniedError> => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AccessDeniedError);
    texts.push(String(error), (error as Error).stack ?? '');
    return error as AccessDeniedError;
  };

  beforeEach(() => {
    namespace = `acl-${randomUUID().slice(0, 8)}`;
  });

  afterEach(async () => {
    await Promise.allSettled(sessions.splice(0).map((session) => session.close()));
    // Only the owner may delete what was created under its ACL.
    await zkRemoveTree(zk().connectString, `/${namespace}`, TENANT_A);
    expect(await zkTree(zk().connectString, `/${namespace}`)).toEqual([]);
    for (const text of texts.splice(0)) {
      expect(text).not.toContain('secret-of-a');
      expect(text).not.toContain('secret-of-b');
    }
  });

  it('by default another tenant cannot queue, delete, change or jump ahead of an entry, but can inspect', async () => {
    const a = await open({ auth: { scheme: 'digest', credentials: TENANT_A } });
    const held = await new FairMutex(a, 'payments/settlement').acquire();
    const b = await open({ auth: { scheme: 'digest', credentials: TENANT_B } });
    await refusal(new FairMutex(b, 'payments/settlement').acquire({ timeoutMs: 5_000 }));
    await refusal(new FairMutex(b, 'payments/other').acquire({ timeoutMs: 5_000 })); // the namespace is A's too
    const dir = `/${namespace}/payments/settlement`;
    await withZkClient(
      zk().connectString,
      async (client) => {
        const NO_AUTH = zookeeper.Exception.NO_AUTH;
        expect(await code((cb) => client.remove(entryOf(held).key, -1, cb)), 'delete the holder').toBe(NO_AUTH);
        expect(
          await code((cb) => client.setData(entryOf(held).key, Buffer.from('mine'), -1, cb)),
          'change the holder',
        ).toBe(NO_AUTH);
        // An entry named to sort ahead of every sequence number.
        const ahead = `${dir}/_c_00000000-0000-0000-0000-000000000000-lock-0000000000`;
        expect(
          await code((cb) => client.create(ahead, Buffer.alloc(0), zookeeper.CreateMode.EPHEMERAL, cb)),
          'queue ahead',
        ).toBe(NO_AUTH);
        expect(
          await code((cb) =>
            client.setACL(
              dir,
              (zookeeper.ACL as unknown as { OPEN_ACL_UNSAFE: zookeeper.ACL[] }).OPEN_ACL_UNSAFE,
              -1,
              cb,
            ),
          ),
          'open the directory',
        ).toBe(NO_AUTH);
      },
      TENANT_B,
    );
    // Reading is allowed to everyone: an operator without credentials sees the queue.
    const view = await inspect('payments/settlement');
    expect(view.entries.map((entry) => [entry.role, entry.session])).toEqual([['holder', a.id]]);
    expect(held.held).toBe(true);
    await held.release();
    expect((await zkTree(zk().connectString, dir, TENANT_A)).filter((node) => node.ephemeralOwner !== 0n)).toEqual([]);
  });

  it("'creator-only' hides the queue from everyone else, with a typed error instead of a hang", async () => {
    const a = await open({ auth: { scheme: 'digest', credentials: TENANT_A }, acl: 'creator-only' });
    const held = await new FairMutex(a, 'jobs').acquire();
    await refusal(inspect('jobs'));
    const b = await open({});
    await refusal(backendOf(b).list('jobs'));
    await refusal(new FairMutex(b, 'jobs').acquire({ timeoutMs: 5_000 }));
    // The same credentials in another session are the same creator: a second process of tenant A queues.
    const a2 = await open({ auth: { scheme: 'digest', credentials: TENANT_A }, acl: 'creator-only' });
    const next = new FairMutex(a2, 'jobs').acquire({ timeoutMs: 5_000 });
    await held.release();
    await (await next).release();
  });

  it('works under a namespace whose ancestors are locked down (creates only what is missing)', async () => {
    // A shared server: the operator owns /<top>, read-only to everyone, and opened /<top>/app for the app.
    const top = namespace.split('-')[0]! + '-top-' + namespace.split('-')[1]!;
    await withZkClient(
      zk().connectString,
      async (client) => {
        const ownerOnly = aclFor('creator-all-world-read');
        const open = aclFor('open');
        expect(
          await code((cb) => client.create(`/${top}`, Buffer.alloc(0), ownerOnly, zookeeper.CreateMode.PERSISTENT, cb)),
        ).toBe(0);
        expect(
          await code((cb) => client.create(`/${top}/app`, Buffer.alloc(0), open, zookeeper.CreateMode.PERSISTENT, cb)),
        ).toBe(0);
      },
      TENANT_A,
    );
    try {
      const session = await connect(`zk://${zk().connectString}/${top}/app`, {});
      sessions.push(session);
      const lock = await new FairMutex(session, 'jobs/nightly').acquire({ timeoutMs: 5_000 });
      await lock.release();
    } finally {
      await zkRemoveTree(zk().connectString, `/${top}`, TENANT_A);
    }
  });

  it('an acquire whose create succeeds but whose listing is refused fails with AccessDeniedError and deletes its entry', async () => {
    // A directory the tenant may create and delete children in (and change the ACL of), but not list.
    const { ACL, Id, Permission } = zookeeper as unknown as {
      ACL: new (permission: number, id: unknown) => zookeeper.ACL;
      Id: new (scheme: string, id: string) => unknown;
      Permission: { CREATE: number; DELETE: number; ADMIN: number };
    };
    const blind = [new ACL(Permission.CREATE | Permission.DELETE | Permission.ADMIN, new Id('auth', ''))];
    await withZkClient(
      zk().connectString,
      async (client) => {
        expect(
          await code((cb) =>
            client.create(
              `/${namespace}`,
              Buffer.alloc(0),
              aclFor('creator-all-world-read'),
              zookeeper.CreateMode.PERSISTENT,
              cb,
            ),
          ),
        ).toBe(0);
        expect(
          await code((cb) =>
            client.create(`/${namespace}/blind`, Buffer.alloc(0), blind, zookeeper.CreateMode.PERSISTENT, cb),
          ),
        ).toBe(0);
      },
      TENANT_A,
    );
    const a = await open({ auth: { scheme: 'digest', credentials: TENANT_A } });
    await refusal(new FairMutex(a, 'blind').acquire({ timeoutMs: 5_000 }));
    // Let the tenant list the directory again: the entry the refused acquire created is gone.
    const children = await withZkClient(
      zk().connectString,
      async (client) => {
        expect(await code((cb) => client.setACL(`/${namespace}/blind`, aclFor('creator-all-world-read'), -1, cb))).toBe(
          0,
        );
        for (let i = 0; i < 50; i += 1) {
          const listed = await new Promise<string[]>((resolve, reject) =>
            client.getChildren(`/${namespace}/blind`, (error, found) => (error ? reject(error) : resolve(found))),
          );
          if (listed.length === 0) return listed;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return ['still there'];
      },
      TENANT_A,
    );
    expect(children).toEqual([]);
  });

  it('a release or a give-up whose delete an ACL change refuses fails at once with AccessDeniedError; the entry stays until its session ends', async () => {
    const { ACL, Id, Permission } = zookeeper as unknown as {
      ACL: new (permission: number, id: unknown) => zookeeper.ACL;
      Id: new (scheme: string, id: string) => unknown;
      Permission: { READ: number; WRITE: number; CREATE: number; DELETE: number; ADMIN: number };
    };
    const credentials = { auth: { scheme: 'digest' as const, credentials: TENANT_A } };
    const [a, waiterSession, quitter] = [await open(credentials), await open(credentials), await open(credentials)];
    const held = await new FairMutex(a, 'frozen').acquire();
    const waiting = new FairMutex(waiterSession, 'frozen').acquire({ timeoutMs: 30_000 });
    waiting.catch(() => undefined);
    await eventually('queued', async () => (await backendOf(a).list('frozen')).length === 2);
    const dir = `/${namespace}/frozen`;
    // An operator takes DELETE on the lock's directory away from the tenant (ZooKeeper checks a delete against the parent's ACL).
    const setAcl = (acl: zookeeper.ACL[]): Promise<number> =>
      withZkClient(zk().connectString, (client) => code((cb) => client.setACL(dir, acl, -1, cb)), TENANT_A);
    const noDelete = [
      new ACL(Permission.READ | Permission.WRITE | Permission.CREATE | Permission.ADMIN, new Id('auth', '')),
      new ACL(Permission.READ, new Id('world', 'anyone')),
    ];
    expect(await setAcl(noDelete)).toBe(0);
    try {
      const refused = await refusal(held.release());
      expect(refused.message).toContain(`${entryOf(held).key} stays in its queue until this session ends`);
      expect(held.held).toBe(true); // its entry is still the head of the queue
      // A waiter that gives up cannot withdraw either: told so at once, its entry left behind.
      const gaveUp = await refusal(new FairMutex(quitter, 'frozen').acquire({ timeoutMs: 200 }));
      expect(gaveUp.message).toContain('stays in its queue until this session ends');
      expect(await backendOf(a).list('frozen')).toHaveLength(3);
      // The end of the session removes its entries whatever the ACL: the next waiter is granted.
      await a.close();
      const granted = await waiting;
      expect(granted.held).toBe(true);
      await quitter.close();
      expect((await backendOf(waiterSession).list('frozen')).map((entry) => entry.key)).toEqual([entryOf(granted).key]);
      expect(await setAcl(aclFor('creator-all-world-read'))).toBe(0);
      await granted.release();
    } finally {
      await setAcl(aclFor('creator-all-world-read'));
    }
  });

  for (const acl of ['creator-only', 'creator-all-world-read'] as const) {
    it(`a release made while disconnected is sent with the credentials once reconnected (${acl})`, async () => {
      const proxy = await TcpProxy.start({ port: zk().ports[0]! });
      try {
        const options = {
          sessionTimeoutMs: zk().sessionTimeoutMs,
          auth: { scheme: 'digest' as const, credentials: TENANT_A },
          acl,
        };
        const session = await connect(`zk://${proxy.address}/${namespace}`, options);
        sessions.push(session);
        const other = await open(options);
        const held = await new FairMutex(session, 'blip').acquire();
        const next = new FairMutex(other, 'blip').acquire({ timeoutMs: 20_000 });
        next.catch(() => undefined);
        await eventually('queued', async () => (await backendOf(other).list('blip')).length === 2);
        // The connection drops and the server cannot be reached for a moment: the release is queued.
        const suspended = new Promise<void>((resolve) =>
          session.on('state', (state) => state === 'suspended' && resolve()),
        );
        proxy.refuse();
        proxy.drop();
        await suspended;
        const released = held.release();
        released.catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 300));
        proxy.restore();
        await released; // NoAuth here before: the delete went out ahead of the credentials
        const granted = await next;
        expect(granted.held).toBe(true);
        expect((await backendOf(other).list('blip')).map((entry) => entry.key)).toEqual([entryOf(granted).key]);
        await granted.release();
      } finally {
        await Promise.allSettled(sessions.splice(0).map((s) => s.close()));
        await proxy.close();
      }
    });
  }

  it('refuses bad credentials and policies up front without echoing the secret', async () => {
    const url = `zk://${zk().connectString}/acl-bad`;
    const cases: unknown[] = [
      { auth: { scheme: 'digest', credentials: 'no-colon-secret-of-a' } },
      { auth: { scheme: 'digest', credentials: ':secret-of-a' } },
      { auth: { scheme: 'digest', credentials: 'user:' } },
      { auth: { scheme: 'sasl', credentials: 'u:secret-of-a' } },
      { auth: 'digest:u:secret-of-a' },
      { acl: 'creator-only' },
      { acl: 'everyone', auth: { scheme: 'digest', credentials: TENANT_A } },
    ];
    for (const options of cases) {
      const error = await connect(url, options as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, `case ${cases.indexOf(options)}`).toBeInstanceOf(InvalidArgumentError);
      texts.push(String(error));
    }
    const etcd = await connect('etcd://127.0.0.1:1/x', { auth: { scheme: 'digest', credentials: TENANT_A } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(etcd).toBeInstanceOf(InvalidArgumentError);
    texts.push(String(etcd));
  });
});
