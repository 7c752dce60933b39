import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import zookeeper from 'node-zookeeper-client';
import pg from 'pg';

import type { LockHandle } from '../recipes/handle.js';
import { FairMutex } from '../recipes/mutex.js';
import { connect } from '../src/connect.js';
import type { Case, Context } from './case.js';
import { fixed, timesRange } from './report.js';
import { alternateBlocks, flatBlocks, ratioInterval, summarize, timed } from './stats.js';
import { heading, printCases } from './table.js';

/** The issue whose item 2 these figures are for (guarded writes on the lock's own store). */
const ISSUE = 38;
const VALUE = '2026-11';

/**
 * A store's plain write and baton's guarded write of the same small value, in alternating blocks of one
 * run: medians, and the guarded write's cost as a ratio of medians with its 95% interval over rounds.
 */
async function compare(
  context: Context,
  title: string,
  kinds: { plain: [string, () => Promise<void>]; guarded: [string, () => Promise<void>] },
): Promise<unknown> {
  const { size, report } = context;
  const [plainName, plain] = kinds.plain;
  const [guardedName, guarded] = kinds.guarded;
  const blocks = await alternateBlocks(
    { [plainName]: timed(plain), [guardedName]: timed(guarded) },
    { blocks: size.blocks, perBlock: size.perBlock, warmup: Math.min(size.warmup, 300) },
  );
  const flat = flatBlocks(blocks);
  const [plainSummary, guardedSummary] = [
    summarize(plainName, flat[plainName]!),
    summarize(guardedName, flat[guardedName]!),
  ];
  heading(title);
  printCases([plainSummary, guardedSummary]);
  const ratio = guardedSummary.medianMs / plainSummary.medianMs;
  const interval = ratioInterval(blocks[guardedName]!, blocks[plainName]!);
  report.info(
    ISSUE,
    `${title}: guarded / plain, median`,
    ratio,
    `${fixed(3, 'x')(ratio)} (95%: ${timesRange(interval)})`,
  );
  return { plain: plainSummary, guarded: guardedSummary, ratio, interval };
}

/** A session holding one lock, for the guarded side; closed after the case. */
async function holding(url: string, options: object, run: (lock: LockHandle) => Promise<unknown>): Promise<unknown> {
  const session = await connect(url, options);
  try {
    const lock = await new FairMutex(session, 'guarded').acquire();
    try {
      return await run(lock);
    } finally {
      await lock.guarded.delete('v').catch(() => undefined);
      await lock.release();
    }
  } finally {
    await session.close();
  }
}

/** ZooKeeper: setData of a znode against the multi of check(entry) and setData. */
export const zkGuarded: Case = {
  name: 'zk.guarded',
  async run(context) {
    const connectString = await context.zk();
    const client = zookeeper.createClient(connectString, { sessionTimeout: 10_000 });
    await new Promise<void>((resolve) => {
      client.once('connected', () => resolve());
      client.connect();
    });
    const path = '/bench-guarded-plain';
    await new Promise<void>((resolve) => client.create(path, () => resolve()));
    const data = Buffer.from(VALUE);
    const setData = (): Promise<void> =>
      new Promise((resolve, reject) => client.setData(path, data, -1, (error) => (error ? reject(error) : resolve())));
    try {
      return await holding(`zk://${connectString}/bench-guarded`, { sessionTimeoutMs: 10_000 }, (lock) =>
        compare(context, 'ZooKeeper: setData vs guarded put (multi: check, setData)', {
          plain: ['zk setData', setData],
          guarded: ['zk guarded put', () => lock.guarded.put('v', VALUE)],
        }),
      );
    } finally {
      await new Promise<void>((resolve) => client.remove(path, -1, () => resolve()));
      client.close();
    }
  },
};

/** etcd: a put of a key against the Txn comparing the entry's create revision and lease. */
export const etcdGuarded: Case = {
  name: 'etcd.guarded',
  async run(context) {
    const endpoint = await context.etcd();
    const client = new Etcd3({ hosts: endpoint });
    try {
      return await holding(`etcd://${endpoint.replace(/^https?:\/\//, '')}/bench-guarded`, {}, (lock) =>
        compare(context, 'etcd: put vs guarded put (Txn: compare create revision and lease, put)', {
          plain: ['etcd put', async () => void (await client.put('bench-guarded-plain').value(VALUE))],
          guarded: ['etcd guarded put', () => lock.guarded.put('v', VALUE)],
        }),
      );
    } finally {
      await client.delete().key('bench-guarded-plain');
      client.close();
    }
  },
};

/** Redis: SET against the script that checks the entry and the session's key in the lock, then HSET. */
export const redisGuarded: Case = {
  name: 'redis.guarded',
  async run(context) {
    const url = await context.redis();
    const client = new Redis(url);
    try {
      return await holding(`${url}?namespace=bench-guarded`, {}, (lock) =>
        compare(context, 'Redis: SET vs guarded put (one script: check entry and liveness, HSET)', {
          plain: ['redis SET', async () => void (await client.set('bench-guarded-plain', VALUE))],
          guarded: ['redis guarded put', () => lock.guarded.put('v', VALUE)],
        }),
      );
    } finally {
      await client.del('bench-guarded-plain');
      client.disconnect();
    }
  },
};

/** PostgreSQL: a plain UPDATE transaction against the same UPDATE in a guarded transaction, on one client. */
export const postgresGuarded: Case = {
  name: 'postgres.guarded',
  async run(context) {
    const url = await context.postgres();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('CREATE TABLE IF NOT EXISTS bench_guarded (k text PRIMARY KEY, v text NOT NULL)');
    await client.query("INSERT INTO bench_guarded VALUES ('period', '') ON CONFLICT DO NOTHING");
    const update = "UPDATE bench_guarded SET v = $1 WHERE k = 'period'";
    const parsed = new URL(url);
    parsed.searchParams.set('namespace', 'bench-guarded');
    try {
      return await holding(parsed.toString(), {}, async (lock) => {
        const transaction = await compare(context, 'PostgreSQL: UPDATE transaction vs guarded transaction', {
          plain: [
            'pg BEGIN; UPDATE; COMMIT',
            async () => {
              await client.query('BEGIN');
              await client.query(update, [VALUE]);
              await client.query('COMMIT');
            },
          ],
          guarded: [
            'pg guarded transaction',
            () => lock.guarded.transaction(client, async (tx) => void (await tx.query(update, [VALUE]))),
          ],
        });
        const put = await compare(context, 'PostgreSQL: UPDATE vs guarded put (one statement)', {
          plain: ['pg UPDATE', async () => void (await client.query(update, [VALUE]))],
          guarded: ['pg guarded put', () => lock.guarded.put('v', VALUE)],
        });
        return { transaction, put };
      });
    } finally {
      await client.query('DROP TABLE IF EXISTS bench_guarded');
      await client.end();
    }
  },
};
