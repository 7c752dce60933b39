import { connect } from 'baton-locks/testing';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { AccessDeniedError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { runInspect } from '../../../src/inspect.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { type EtcdCluster, startEtcd } from '../../harness/servers/etcd.js';
import { eventually } from '../../harness/wait.js';

const ROOT = { username: 'root', password: 'root-secret-5e1a' };
const ALICE = { username: 'alice', password: 'alice-secret-33b0' };
const BOB = { username: 'bob', password: 'bob-secret-c7d4' };
const CAROL = { username: 'carol', password: 'carol-secret-0a9e' };

/** An etcd of its own (auth cannot be switched off for the shared one's other tests), with one prefix per user. */
describe('etcd users and roles', () => {
  let etcd: EtcdCluster;
  const texts: string[] = [];
  const host = (): string => etcd.endpoints[0]!.replace('http://', '');
  const open = (namespace: string, auth: { username: string; password: string }): Promise<Session> =>
    connect(`etcd://${host()}/${namespace}`, { ttlSeconds: 2, connectTimeoutMs: 5_000, etcd: { auth } });
  const refusal = async (promise: Promise<unknown>): Promise<void> => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AccessDeniedError);
    texts.push(String(error), (error as Error).stack ?? '');
  };

  beforeAll(async () => {
    etcd = await startEtcd({ size: 1 });
    const admin = new Etcd3({ hosts: etcd.endpoints });
    try {
      await admin.role('root').create();
      await admin.user(ROOT.username).create(ROOT.password);
      await admin.user(ROOT.username).addRole('root');
      for (const [user, prefix] of [
        [ALICE, 'tenant-a/'],
        [BOB, 'tenant-b/'],
        [CAROL, 'tenant-c/'],
      ] as const) {
        const role = await admin.role(`${user.username}-role`).create();
        await role.grant({ permission: 'Readwrite', range: admin.range({ prefix }) });
        await admin.user(user.username).create(user.password);
        await admin.user(user.username).addRole(role);
      }
      await admin.auth.authEnable();
    } finally {
      admin.close();
    }
  }, 60_000);

  afterAll(async () => {
    await etcd?.stop();
    for (const text of texts) for (const user of [ROOT, ALICE, BOB, CAROL]) expect(text).not.toContain(user.password);
  });

  it("a user limited to one prefix gets AccessDeniedError, not a hang, on another tenant's queue", async () => {
    const bob = await open('tenant-b', BOB);
    const alice = await open('tenant-a', ALICE);
    const intruder = await open('tenant-b', ALICE);
    try {
      const held = await new FairMutex(bob, 'jobs').acquire();
      expect((await new FairMutex(alice, 'jobs').acquire()).fencingToken).toBeGreaterThan(0n); // her own prefix works
      await refusal(new FairMutex(intruder, 'jobs').acquire({ timeoutMs: 10_000 }));
      await refusal(new FairMutex(intruder, 'jobs').tryAcquire());
      await refusal(backendOf(intruder).list('jobs'));
      await refusal(
        runInspect({
          url: `etcd://${host()}/tenant-b`,
          name: 'jobs',
          json: true,
          watch: false,
          connectTimeoutMs: 5_000,
          connect: { etcd: { auth: ALICE } },
          write: () => undefined,
        }),
      );
      expect(held.held).toBe(true);
      expect((await backendOf(bob).list('jobs')).map((entry) => entry.key)).toEqual([entryOf(held).key]);
      await held.release();
    } finally {
      await Promise.all([bob.close(), alice.close(), intruder.close()]);
    }
    // Nothing left behind by anyone: read as root.
    const root = new Etcd3({ hosts: etcd.endpoints, auth: ROOT });
    try {
      expect(await root.getAll().prefix('tenant-').keys()).toEqual([]);
      expect((await root.leaseClient.leaseLeases({})).leases).toEqual([]);
    } finally {
      root.close();
    }
  });

  it('a release whose delete a role change refuses fails at once with AccessDeniedError naming the entry; the entry goes with the lease', async () => {
    const carol = await open('tenant-c', CAROL);
    const root = new Etcd3({ hosts: etcd.endpoints, auth: ROOT });
    const prefix = { range: root.range({ prefix: 'tenant-c/' }) };
    try {
      const held = await new FairMutex(carol, 'frozen').acquire();
      await root.role('carol-role').grant({ permission: 'Read', ...prefix }); // write taken away
      const error = await held.release().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(AccessDeniedError);
      expect((error as Error).message).toContain(`${entryOf(held).key} stays in its queue until this session ends`);
      texts.push(String(error), (error as Error).stack ?? '');
      expect(held.held).toBe(true);
      await carol.close();
      // Its lease is not kept alive any more (its revoke may be refused as well): the entry goes with it.
      await eventually(
        'the entry gone with the lease',
        async () => (await root.getAll().prefix('tenant-c/').keys()).length === 0,
        4 * 2_000,
      );
    } finally {
      await root.role('carol-role').grant({ permission: 'Readwrite', ...prefix });
      root.close();
    }
  });

  it('a wrong password is refused at connect with AccessDeniedError naming neither the password nor retrying for ever', async () => {
    await refusal(open('tenant-a', { username: 'alice', password: 'wrong-secret-of-alice' }));
    expect(texts.join('\n')).not.toContain('wrong-secret-of-alice');
  });
});
