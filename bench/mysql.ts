import mysql from 'mysql2/promise';

import { FairMutex } from '../recipes/mutex.js';
import { lockNameOf } from '../src/backends/mysql/open.js';
import { connect, mysqlCounters, mysqlWatches } from '../src/testing.js';
import type { Case } from './case.js';
import { sleep } from './clock.js';
import { nodeWorker } from './contended.js';
import { analyse, combine, type ContenderReport, type Contention, medianRate } from './contention.js';
import { batonHerd, HERD, reportHerd } from './herd.js';
import { type LineProcess, startAll, stopAll } from './line-process.js';
import { fixed, times, timesRange } from './report.js';
import { alternateBlocks, flatBlocks, ratioInterval, summarize, type Summary, timed } from './stats.js';
import { heading, printCases, printFigures } from './table.js';

/** Cycles whose statements are counted. */
const COUNTED = 100;
const PROCESSES = 8;

export const MYSQL_CASES = {
  floor: 'raw floor (CALL baton_enqueue, CALL baton_withdraw; one mysql2 connection)',
  floorCopy: "raw floor again (its copy: the run's noise)",
  mutex: 'baton FairMutex acquire+release',
  getLock: 'GET_LOCK + RELEASE_LOCK (one connection)',
  insert: "the seeds' unique-index INSERT + DELETE (one connection)",
} as const;

/** `url` with baton's namespace parameter. */
export function mysqlWithNamespace(url: string, namespace: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('namespace', namespace);
  return parsed.toString();
}

/** A plain mysql2 connection set up as baton sets up its own (autocommit, UTC, BIGINTs as strings). */
export async function mysqlClient(url: string): Promise<mysql.Connection> {
  const c = await mysql.createConnection({ uri: url, supportBigNumbers: true, bigNumberStrings: true });
  await c.query(`SET autocommit = 1, time_zone = '+00:00'`);
  return c;
}

/** The database a MySQL URL names (the `GET_LOCK` names of entries carry it). */
function databaseOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/**
 * The seeds' MySQL lock (the original articles'): a table with a unique index on the lock's name; an
 * INSERT takes the lock, a DELETE gives it back.
 */
async function seedsLockTable(raw: mysql.Connection): Promise<void> {
  await raw.query('DROP TABLE IF EXISTS bench_seed_lock');
  await raw.query(`CREATE TABLE bench_seed_lock (
    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    lock_name VARCHAR(64) NOT NULL DEFAULT '',
    \`desc\` VARCHAR(1024) NOT NULL DEFAULT '',
    update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
    UNIQUE KEY uidx_lock_name (lock_name)
  ) ENGINE=InnoDB`);
}

/** The raw floor's cycle: the very two statements baton sends, under a session row of its own. */
async function floorCycles(raw: mysql.Connection, url: string): Promise<{ cycle(queue: string): Promise<void> }> {
  const [sets] = await raw.query('CALL baton_open_session(3600000, ?)', ['bench floor']);
  const row = String((sets as { id: string }[][])[0]![0]!.id);
  const database = databaseOf(url);
  let n = 0;
  return {
    async cycle(queue) {
      const key = `floor${row}.${(n += 1)}`;
      const name = lockNameOf(database, key);
      await raw.query('CALL baton_enqueue(?, ?, ?, ?, ?, ?, ?, ?)', [row, key, name, 'bench', queue, 'lock', null, '']);
      await raw.query('CALL baton_withdraw(?, ?, ?, ?)', [key, row, name, 0]);
    },
  };
}

/**
 * The uncontended cycle: baton's FairMutex beside the raw floor (the two CALLs baton sends, on one
 * connection), beside MySQL's own `GET_LOCK`/`RELEASE_LOCK` and beside the seeds' unique-index lock.
 */
export const mysqlCycle: Case = {
  name: 'mysql.cycle',
  async run({ mysql: server, size, report }) {
    const url = await server();
    const session = await connect(mysqlWithNamespace(url, 'bench'), { sessionTimeoutMs: 10_000 });
    const raw = await mysqlClient(url);
    try {
      await seedsLockTable(raw);
      const floor = await floorCycles(raw, url);
      const mutex = new FairMutex(session, 'cycle');
      const contenders: Record<string, () => Promise<void>> = {
        [MYSQL_CASES.floor]: () => floor.cycle('floor'),
        [MYSQL_CASES.floorCopy]: () => floor.cycle('floor-copy'),
        [MYSQL_CASES.mutex]: async () => {
          const lock = await mutex.acquire();
          await lock.release();
        },
        [MYSQL_CASES.getLock]: async () => {
          await raw.query("SELECT GET_LOCK('bench-cycle', 10)");
          await raw.query("SELECT RELEASE_LOCK('bench-cycle')");
        },
        [MYSQL_CASES.insert]: async () => {
          await raw.query('INSERT INTO bench_seed_lock (lock_name, `desc`) VALUES (?, ?)', ['cycle', 'bench']);
          await raw.query('DELETE FROM bench_seed_lock WHERE lock_name = ?', ['cycle']);
        },
      };
      const byBlock = await alternateBlocks(
        Object.fromEntries(Object.entries(contenders).map(([name, cycle]) => [name, timed(cycle)])),
        size,
      );
      const results = Object.entries(flatBlocks(byBlock)).map(([name, values]) => summarize(name, values));
      const find = (name: string): Summary => results.find((r) => r.name === name)!;
      const before = mysqlCounters.statements;
      await timed(contenders[MYSQL_CASES.mutex]!)(COUNTED);
      const statements = (mysqlCounters.statements - before) / COUNTED;
      await raw.query('DROP TABLE IF EXISTS bench_seed_lock');
      await raw.query("DELETE FROM baton_sessions WHERE client = 'bench floor'");

      heading('11. MySQL/MariaDB uncontended cycle');
      printCases(results, { floor: find(MYSQL_CASES.floor), GET_LOCK: find(MYSQL_CASES.getLock) });
      printFigures('', { 'statements per FairMutex cycle (main connection)': statements.toFixed(2) });
      reportCycle(report, byBlock, find, statements);
      return { results, statements };
    } finally {
      await session.close();
      await raw.end();
    }
  },
};

function reportCycle(
  report: Parameters<Case['run']>[0]['report'],
  byBlock: Record<string, number[][]>,
  find: (name: string) => Summary,
  statements: number,
): void {
  const mutex = find(MYSQL_CASES.mutex);
  const ratio = (other: string): number => mutex.medianMs / find(other).medianMs;
  report.info(
    11,
    'MySQL FairMutex cycle, median / p99',
    mutex.medianMs,
    `${mutex.medianMs.toFixed(3)} / ${mutex.p99Ms.toFixed(3)} ms`,
  );
  report.exactly(11, 'MySQL statements per FairMutex cycle', statements, 2, fixed(2));
  const interval = ratioInterval(byBlock[MYSQL_CASES.mutex]!, byBlock[MYSQL_CASES.floor]!);
  report.atMost(
    11,
    'MySQL FairMutex / raw floor (same two CALLs)',
    ratio(MYSQL_CASES.floor),
    1.1,
    times,
    `(95% ${timesRange(interval)})`,
  );
  const copy = find(MYSQL_CASES.floorCopy).medianMs / find(MYSQL_CASES.floor).medianMs;
  report.info(11, "MySQL the floor's identical copy / the floor", copy, `${times(copy)} (this run's noise)`);
  for (const [label, other] of [
    ['GET_LOCK+RELEASE_LOCK', MYSQL_CASES.getLock],
    ["the seeds' unique-index INSERT+DELETE", MYSQL_CASES.insert],
  ] as const)
    report.info(
      11,
      `MySQL FairMutex / ${label}`,
      ratio(other),
      `${times(ratio(other))} (${find(other).medianMs.toFixed(3)} ms)`,
    );
}

/** One block of every contender process of a kind on one lock at once. */
async function contendBlock(contenders: readonly LineProcess[], ms: number): Promise<Contention> {
  const answers = await Promise.all(contenders.map((c) => c.ask(`contend ${ms}`)));
  return analyse(answers.map((answer) => JSON.parse(answer) as ContenderReport));
}

/**
 * 8 processes on one lock, holding it for no time: baton's FairMutex (each process a session) and
 * MySQL's `GET_LOCK` (each process one connection blocked in it), in alternating blocks.
 */
export const mysqlContended: Case = {
  name: 'mysql.contended',
  async run({ mysql: server, quick, report }) {
    const url = await server();
    const blocks = quick ? 2 : 6;
    const blockMs = quick ? 1_500 : 2_000;
    const started: LineProcess[][] = [];
    try {
      const baton = await startAll(
        (i) => nodeWorker('contender.js', [mysqlWithNamespace(url, 'bench'), 'contended'], `baton contender ${i}`),
        PROCESSES,
      );
      started.push(baton);
      const getLock = await startAll(
        (i) => nodeWorker('contender.js', [`getlock+${url}`, 'contended'], `GET_LOCK contender ${i}`),
        PROCESSES,
      );
      started.push(getLock);
      const measured: { baton: Contention[]; getLock: Contention[] } = { baton: [], getLock: [] };
      await contendBlock(baton, 500); // warm-up
      await contendBlock(getLock, 500);
      for (let block = 0; block < blocks; block += 1) {
        const order = block % 2 === 0 ? (['baton', 'getLock'] as const) : (['getLock', 'baton'] as const);
        for (const kind of order) measured[kind].push(await contendBlock(kind === 'baton' ? baton : getLock, blockMs));
        await sleep(50);
      }
      const batonAll = combine(measured.baton);
      const rates = { baton: medianRate(measured.baton), getLock: medianRate(measured.getLock) };
      heading(`12. MySQL contended: ${PROCESSES} processes on one lock`);
      printFigures(`${blocks} blocks of ${blockMs} ms each, alternating:`, {
        'baton FairMutex acquisitions/s (median of blocks)': rates.baton.toFixed(0),
        'GET_LOCK acquisitions/s (median of blocks)': rates.getLock.toFixed(0),
        'baton grants out of queue order': String(batonAll.outOfOrder),
        'baton grants overlapping the previous hold': String(batonAll.overlaps),
      });
      report.info(12, `MySQL FairMutex acquisitions/s, ${PROCESSES} processes`, rates.baton, rates.baton.toFixed(0));
      report.info(12, `GET_LOCK acquisitions/s, ${PROCESSES} processes`, rates.getLock, rates.getLock.toFixed(0));
      report.holds(
        12,
        'MySQL FairMutex strict FIFO, no overlap',
        batonAll.outOfOrder === 0 && batonAll.overlaps === 0,
        `${batonAll.outOfOrder} out of order, ${batonAll.overlaps} overlaps`,
        '0, 0',
      );
      return { rates, outOfOrder: batonAll.outOfOrder, overlaps: batonAll.overlaps };
    } finally {
      await stopAll(started.flat());
    }
  },
};

/**
 * Statements the server received so far (`Questions`: every client statement, none inside a procedure),
 * less the readings' own.
 */
export function serverQuestions(admin: mysql.Connection): () => Promise<number> {
  let readings = 0;
  return async () => {
    const [rows] = await admin.query("SHOW GLOBAL STATUS LIKE 'Questions'");
    return Number((rows as { Value: string }[])[0]!.Value) - readings++;
  };
}

/** 50 waiters queued, one release: how many wake-ups reach the waiters, and statements per handoff. */
export const mysqlHerd: Case = {
  name: 'mysql.herd',
  async run(context) {
    const url = await context.mysql();
    const admin = await mysqlClient(url);
    const mainBefore = mysqlCounters.statements;
    const backstopBefore = mysqlCounters.backstopWakes;
    const herd = await batonHerd(mysqlWithNamespace(url, 'bench'), {
      armed: async () => {
        const deadline = performance.now() + 30_000;
        while (mysqlWatches.size < HERD) {
          if (performance.now() > deadline) throw new Error(`herd: ${HERD} waits not reached`);
          await sleep(5);
        }
      },
      notifications: () => mysqlCounters.notifications,
      requests: serverQuestions(admin),
    }).finally(() => admin.end());
    const main = (mysqlCounters.statements - mainBefore) / HERD;
    reportHerd(context, 'MySQL', herd, {
      'requests counted': "statements the server received (Questions), heartbeats and the wait pool's included",
      "main connections' statements per waiter, whole run (client count)": main.toFixed(2),
      'waits woken by a re-read, not a name, whole run': String(mysqlCounters.backstopWakes - backstopBefore),
    });
    return { ...herd, mainStatementsPerWaiter: main };
  },
};
