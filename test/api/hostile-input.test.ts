import { describe, expect, inject, it } from 'vitest';

import type { Session } from '../../recipes/contract.js';
import { LeaderElection } from '../../recipes/election.js';
import {
  type BatonError,
  ClosedError,
  InvalidArgumentError,
  InvalidNameError,
  NotHeldError,
} from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import { Reentrant } from '../../recipes/reentrant.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { connect } from '../../src/connect.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { memoryFixture } from '../harness/backends/memory.js';
import { mysqlFixture } from '../harness/backends/mysql.js';
import { postgresFixture } from '../harness/backends/postgres.js';
import { redisFixture } from '../harness/backends/redis.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { zkTree } from '../harness/servers/clean.js';

type ErrorClass = new (...args: never[]) => BatonError;

/** One hostile input: what it calls, the error class it must get, and words the message must contain. */
interface Case {
  readonly what: string;
  readonly run: (session: Session, other: Session) => unknown;
  readonly error: ErrorClass;
  /** The bad value as the message shows it, and a word of what is allowed. */
  readonly mentions: readonly string[];
  /** Constructors and observe() throw at once; promise-returning calls reject before any request. */
  readonly sync?: boolean;
}

const NAMES: [string, unknown, string][] = [
  ['empty', '', 'must not be empty'],
  ['"."', '.', 'segment "."'],
  ['".."', '..', 'segment ".."'],
  ['a double slash', 'a//b', 'empty path segment'],
  ['a trailing slash', 'a/', 'empty path segment'],
  ['a leading slash', '/a', 'empty path segment'],
  ['a NUL character', 'a\u0000b', '\\u0000'],
  ['a newline', 'a\nb', '\\n'],
  ['a tab', 'a\tb', '\\t'],
  ['a DEL character', 'a\u007fb', 'A-Z, a-z, 0-9'],
  ['non-ASCII letters', 'über', 'A-Z, a-z, 0-9'],
  ['CJK characters', '锁', 'A-Z, a-z, 0-9'],
  ['an emoji', 'lock-🔒', 'A-Z, a-z, 0-9'],
  ['a space', 'a b', 'A-Z, a-z, 0-9'],
  ['257 characters', 'x'.repeat(257), 'at most 256'],
  ['an entry name pattern', '_c_x-lock-0000000001', 'may not start with "_c_"'],
  ['an entry name pattern as a segment', 'jobs/_c_0c1f-lock-0000000007', 'may not start with "_c_"'],
  ['a segment named like a Curator entry', 'jobs/lock-0000000007', "named like a lock client's queue entry"],
  ['a segment named like a kazoo entry', 'f00d__rlock__0000000001', "named like a lock client's queue entry"],
  ['a "." segment inside', 'a/./b', 'segment "."'],
  ['a ".." segment inside', 'a/../b', 'segment ".."'],
  ['a number', 42, 'must be a string'],
  ['null', null, 'must be a string'],
  ['an object', { toString: () => 'jobs' }, 'must be a string'],
];

const WAITS: [string, unknown, string][] = [
  ['a negative timeout', { timeoutMs: -1 }, '-1'],
  ['a NaN timeout', { timeoutMs: Number.NaN }, 'NaN'],
  ['an infinite timeout', { timeoutMs: Number.POSITIVE_INFINITY }, 'Infinity'],
  ['a timeout past setTimeout', { timeoutMs: 1e12 }, '1000000000000'],
  ['a timeout given as a string', { timeoutMs: '100' }, '"100"'],
  ['a signal that is not an AbortSignal', { signal: { aborted: false } }, 'AbortSignal'],
  ['options that are a string', 'fast', '"fast"'],
  ['options that are an array', [1000], 'array'],
  ['a misspelled timeout', { timeout: 500 }, 'did you mean "timeoutMs"?'],
  ['an unknown option', { retries: 3 }, '"retries"'],
];

function cases(): Case[] {
  const list: Case[] = [];
  for (const [what, name, mention] of NAMES) {
    list.push({
      what: `FairMutex name: ${what}`,
      run: (s) => new FairMutex(s, name as string),
      error: InvalidNameError,
      mentions: [mention],
      sync: true,
    });
  }
  // The other constructors share the check; one of each is enough to show they use it.
  list.push({
    what: 'ReadWriteLock name: a double slash',
    run: (s) => new ReadWriteLock(s, 'a//b'),
    error: InvalidNameError,
    mentions: ['"a//b"'],
    sync: true,
  });
  list.push({
    what: 'LeaderElection name: empty',
    run: (s) => new LeaderElection(s, '', { id: 'x' }),
    error: InvalidNameError,
    mentions: ['must not be empty'],
    sync: true,
  });
  for (const [what, options, mention] of WAITS) {
    list.push({
      what: `acquire: ${what}`,
      run: (s) => new FairMutex(s, 'jobs').acquire(options as never),
      error: InvalidArgumentError,
      mentions: [mention, 'expected'],
    });
  }
  list.push({
    what: 'campaign: a negative timeout',
    run: (s) => new LeaderElection(s, 'jobs', { id: 'x' }).campaign({ timeoutMs: -5 }),
    error: InvalidArgumentError,
    mentions: ['-5', 'expected'],
  });
  list.push({
    what: 'readLock: a NaN timeout',
    run: (s) => new ReadWriteLock(s, 'cfg').readLock.acquire({ timeoutMs: Number.NaN }),
    error: InvalidArgumentError,
    mentions: ['NaN', 'expected'],
  });
  list.push({
    what: 'reentrant acquire: a negative timeout',
    run: (s) => new Reentrant(new FairMutex(s, 'jobs')).acquire({ timeoutMs: -1 }),
    error: InvalidArgumentError,
    mentions: ['-1', 'expected'],
  });
  list.push({
    what: 'withLock: a callback that is not a function',
    run: (s) => new FairMutex(s, 'jobs').withLock('run' as never),
    error: InvalidArgumentError,
    mentions: ['"run"', 'function'],
  });
  list.push({
    what: 'observe: a signal that is not an AbortSignal',
    run: (s) => new LeaderElection(s, 'jobs', { id: 'x' }).observe({ signal: 'stop' as never }),
    error: InvalidArgumentError,
    mentions: ['"stop"', 'AbortSignal'],
    sync: true,
  });
  list.push({
    what: 'election id: empty',
    run: (s) => new LeaderElection(s, 'jobs', { id: '' }),
    error: InvalidArgumentError,
    mentions: ['""', 'non-empty string'],
    sync: true,
  });
  list.push({
    what: 'election id: a number',
    run: (s) => new LeaderElection(s, 'jobs', { id: 7 as never }),
    error: InvalidArgumentError,
    mentions: ['7', 'non-empty string'],
    sync: true,
  });
  list.push({
    what: 'interop: an unknown peer',
    run: (s) => new FairMutex(s, 'jobs', { interop: 'redisson' as never }),
    error: InvalidArgumentError,
    mentions: ['"redisson"', '"kazoo"'],
    sync: true,
  });
  list.push({
    what: 'interop: LeaderSelector names for a lock',
    run: (s) => new ReadWriteLock(s, 'cfg', { interop: 'curator-selector' as never }),
    error: InvalidArgumentError,
    mentions: ['"curator-selector"', '"curator"'],
    sync: true,
  });
  list.push({
    what: 'recipe options: an unknown key',
    run: (s) => new FairMutex(s, 'jobs', { interrop: 'kazoo' } as never),
    error: InvalidArgumentError,
    mentions: ['"interrop"', 'known options'],
    sync: true,
  });
  list.push({
    what: 'election options: a misspelled id',
    run: (s) => new LeaderElection(s, 'jobs', { idd: 'x' } as never),
    error: InvalidArgumentError,
    mentions: ['"idd"', 'did you mean "id"?'],
    sync: true,
  });
  list.push({
    what: 'election options: an unknown key',
    run: (s) => new LeaderElection(s, 'jobs', { id: 'x', timeoutMs: 5 } as never),
    error: InvalidArgumentError,
    mentions: ['"timeoutMs"', '"id"'],
    sync: true,
  });
  list.push({
    what: 'recipe options: a string',
    run: (s) => new FairMutex(s, 'jobs', 'kazoo' as never),
    error: InvalidArgumentError,
    mentions: ['"kazoo"', 'object'],
    sync: true,
  });
  list.push({
    what: 'Reentrant of something that is not a lock',
    run: () => new Reentrant({} as never),
    error: InvalidArgumentError,
    mentions: ['object', 'FairMutex'],
    sync: true,
  });
  list.push({
    what: 'a recipe given something that is not a session',
    run: () => new FairMutex({ backend: 1 } as never, 'jobs'),
    error: InvalidArgumentError,
    mentions: ['session'],
    sync: true,
  });
  list.push({
    what: 'a recipe given the Promise of a session',
    run: (s) => new FairMutex(Promise.resolve(s) as never, 'jobs'),
    error: InvalidArgumentError,
    mentions: ['awaited', 'Promise'],
    sync: true,
  });
  list.push({
    what: 'downgrade of a write lock held through another session',
    run: async (s, other) => {
      const foreign = await new ReadWriteLock(other, 'cfg').writeLock.acquire();
      try {
        return await new ReadWriteLock(s, 'cfg').downgrade(foreign);
      } finally {
        await foreign.release();
      }
    },
    error: InvalidArgumentError,
    mentions: ['write lock handle', 'held write lock of this ReadWriteLock'],
  });
  list.push({
    what: 'reentrant release by an owner that holds nothing',
    run: (s) => new Reentrant(new FairMutex(s, 'jobs')).release({ owner: 'nobody' }),
    error: NotHeldError,
    mentions: ['released more often than acquired'],
  });
  list.push({
    what: 'reentrant release with null options',
    run: (s) => new Reentrant(new FairMutex(s, 'jobs')).release(null as never),
    error: InvalidArgumentError,
    mentions: ['null', 'owner'],
  });
  return list;
}

/** Everything under the namespace on the server, directories included, sorted. */
async function onServer(fixture: Fixture, namespace: string): Promise<string[]> {
  if (fixture.name.startsWith('ZooKeeper'))
    return (await zkTree(inject('zkStandalone').connectString, `/${namespace}`)).map((node) => node.path).sort();
  return (await fixture.entries(namespace)).sort(); // etcd: every key under the prefix; memory: every key of the store
}

function hostileSuite(getFixture: () => Fixture): void {
  describe(`hostile input on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it(`gets a typed error naming the bad value for each of ${cases().length} cases, and leaves nothing on the server`, async () => {
      const [session, other] = [await scope.open(), await scope.open()];
      // The queue the downgrade case uses exists beforehand: its directory is not the hostile call's doing.
      await (await new ReadWriteLock(other, 'cfg').writeLock.acquire()).release();
      for (const hostile of cases()) {
        const before = await onServer(scope.fixture, scope.namespace);
        let thrown: unknown;
        let returned: unknown;
        try {
          returned = hostile.run(session, other);
        } catch (error) {
          thrown = error;
        }
        if (hostile.sync) expect(thrown, `${hostile.what}: thrown synchronously`).toBeInstanceOf(hostile.error);
        else {
          expect(thrown, `${hostile.what}: a rejection, not a throw`).toBeUndefined();
          thrown = await (returned as Promise<unknown>).then(
            () => undefined,
            (error: unknown) => error,
          );
        }
        expect(thrown, hostile.what).toBeInstanceOf(hostile.error);
        for (const word of hostile.mentions) expect((thrown as Error).message, hostile.what).toContain(word);
        expect(await onServer(scope.fixture, scope.namespace), `${hostile.what}: left on the server`).toEqual(before);
      }
    });

    it('after close(): every call fails with ClosedError, double release and double resign are quiet', async () => {
      const session = await scope.open();
      const mutex = new FairMutex(session, 'jobs');
      const election = new LeaderElection(session, 'leader', { id: 'x' });
      const lock = await mutex.acquire();
      const leadership = await new LeaderElection(await scope.open(), 'leader2', { id: 'y' }).campaign();
      await lock.release();
      await lock.release();
      await leadership.resign();
      await leadership.resign();
      await session.close();
      const before = await onServer(scope.fixture, scope.namespace);
      await expect(mutex.acquire()).rejects.toBeInstanceOf(ClosedError);
      await expect(mutex.tryAcquire()).rejects.toBeInstanceOf(ClosedError);
      await expect(mutex.withLock(() => 1)).rejects.toBeInstanceOf(ClosedError);
      await expect(election.campaign()).rejects.toBeInstanceOf(ClosedError);
      await expect(election.leader()).rejects.toBeInstanceOf(ClosedError);
      expect(() => election.observe()).toThrow(ClosedError);
      expect(() => new ReadWriteLock(session, 'cfg')).toThrow(ClosedError); // a recipe made on a closed session
      expect(await onServer(scope.fixture, scope.namespace)).toEqual(before);
    });
  });
}

hostileSuite(memoryFixture);
hostileSuite(() => zkFixture('zkStandalone'));
hostileSuite(() => etcdFixture('etcdStandalone'));
hostileSuite(postgresFixture);
hostileSuite(mysqlFixture);
hostileSuite(redisFixture);

const URLS: [string, unknown, string][] = [
  ['an unknown scheme', 'ftp://127.0.0.1:21/x', '"ftp:"'],
  ['a missing host', 'zk:///x', 'host:port'],
  ['a missing port', 'etcd://127.0.0.1/x', 'port'],
  ['port 0', 'zk://127.0.0.1:0/x', 'port from 1 to 65535'],
  ['port 99999', 'zk://127.0.0.1:99999/x', 'port from 1 to 65535'],
  ['a port that is not a number', 'zk://127.0.0.1:abc/x', 'host:port'],
  ['credentials in the URL', 'zk://admin:hunter2@127.0.0.1:2181/x', 'no credentials in the URL'],
  ['an empty host in a list', 'zk://127.0.0.1:2181,/x', 'host:port'],
  ["ZooKeeper's reserved /zookeeper tree as namespace", 'zk://127.0.0.1:2181/zookeeper', 'reserved'],
  ['a namespace with a double slash', 'zk://127.0.0.1:2181/a//b', 'namespace'],
  ['a namespace with a space', 'etcd://127.0.0.1:2379/a b', 'url'],
  ['a memory URL without a name', 'memory://', 'memory store name'],
  ['not a string', 42, 'zk://host:port'],
  ['a MySQL URL without a database', 'mysql://127.0.0.1:3306', 'a database name'],
  ['a MySQL database name with a dash', 'mysql://app:hunter2@127.0.0.1:3306/my-app', '"my-app"'],
  ['a MySQL database name of 65 characters', `mysql://127.0.0.1:3306/${'d'.repeat(65)}`, '1 to 64 characters'],
  ['a MySQL URL without a host', 'mysql://app:hunter2@/app', 'app:***@'],
  ['a MySQL URL with port 0', 'mysql://127.0.0.1:0/app', 'port from 1 to 65535'],
  ['a MySQL URL with port 99999', 'mysql://app:hunter2@127.0.0.1:99999/app', 'mysql://[user[:password]@]host'],
  ['a MySQL URL with a fragment', 'mysql://127.0.0.1:3306/app#x', 'mysql://[user[:password]@]host'],
  ['an unknown MySQL URL parameter', 'mysql://app:hunter2@127.0.0.1:3306/app?schema=x', 'only namespace'],
  ['a MySQL namespace given twice', 'mysql://127.0.0.1:3306/app?namespace=a&namespace=b', 'given once'],
  ['a MySQL namespace with a double slash', 'mariadb://127.0.0.1:3306/app?namespace=a//b', '"a//b"'],
];

/** MySQL's own options, refused before any connection (the port is closed: a connect would fail otherwise). */
const MYSQL_OPTIONS: [string, unknown, string][] = [
  ['mysql options that are a string', { mysql: 'hunter2' }, 'an object'],
  ['a misspelled mysql.password', { mysql: { pasword: 'hunter2' } }, 'mysql.pasword'],
  ['a mysql.password that is a number', { mysql: { password: 42 } }, 'a string'],
  ['a mysql.user that is an array', { mysql: { user: ['app'] } }, 'a string'],
  ['a mysql.tls that is a boolean', { mysql: { tls: true } }, "node:tls's connection options"],
  ['a mysql.createSchema that is a string', { mysql: { createSchema: 'no' } }, 'true or false'],
  ['mysql options on a PostgreSQL URL', { mysql: { password: 'hunter2' } }, 'mysql:// URLs only'],
];

const OPTIONS: [string, unknown, string][] = [
  ['a negative session timeout', { sessionTimeoutMs: -1 }, '-1'],
  ['a NaN session timeout', { sessionTimeoutMs: Number.NaN }, 'NaN'],
  ['an infinite connect timeout', { connectTimeoutMs: Number.POSITIVE_INFINITY }, 'Infinity'],
  ['a session timeout as a string', { sessionTimeoutMs: '10000' }, '"10000"'],
  ['a huge session timeout', { sessionTimeoutMs: 1e13 }, '10000000000000'],
  ['a zero connect timeout', { connectTimeoutMs: 0 }, '0'],
  ['a fractional TTL', { ttlSeconds: 1.5 }, '1.5'],
  ['a zero TTL', { ttlSeconds: 0 }, '0'],
  ['an unknown onSuspend', { onSuspend: 'maybe' }, '"maybe"'],
  ['an unknown onWaiterLost', { onWaiterLost: 'retry' }, '"retry"'],
  ['a non-boolean reconnectAfterLoss', { reconnectAfterLoss: 'yes' }, '"yes"'],
  ['a negative margin', { deadlineMarginMs: -5 }, '-5'],
  ['options that are a string', 'fast', '"fast"'],
  ['a misspelled session timeout', { sessionTimoutMs: 5 }, 'did you mean "sessionTimeoutMs"?'],
  ['an unknown option', { poolSize: 4 }, '"poolSize"'],
];

describe('hostile connect() input', () => {
  it.each([
    ...URLS.map(([what, url, mention]) => [what, url, {}, mention] as const),
    ...OPTIONS.map(([what, options, mention]) => [what, 'memory://hostile', options, mention] as const),
    ...MYSQL_OPTIONS.map(
      ([what, options, mention]) =>
        [
          what,
          what.includes('PostgreSQL') ? 'postgres://127.0.0.1:1/app' : 'mysql://127.0.0.1:1/app',
          options,
          mention,
        ] as const,
    ),
  ])('refuses %s with InvalidArgumentError before connecting', async (_what, url, options, mention) => {
    const error = await connect(url as string, options as never).then(
      async (session) => {
        await session.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toContain(mention);
    expect((error as Error).message).not.toContain('hunter2');
  });
});
