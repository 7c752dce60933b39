import pg from 'pg';

import { FairMutex } from '../recipes/mutex.js';
import { connect, postgresCounters, postgresWatches } from '../src/testing.js';
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

export const POSTGRES_CASES = {
  floor: 'raw floor (SELECT enqueue(), DELETE; one pg connection)',
  floorCopy: "raw floor again (its copy: the run's noise)",
  mutex: 'baton FairMutex acquire+release',
  advisory: 'pg_advisory_lock + pg_advisory_unlock (one connection)',
} as const;

/** `url` with baton's namespace parameter. */
function withNamespace(url: string, namespace: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('namespace', namespace);
  return parsed.toString();
}

/** A plain node-postgres client on the server (the floor's and the advisory lock's connection). */
async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

/**
 * The uncontended cycle: baton's FairMutex beside the raw floor (the very two statements baton sends,
 * `SELECT * FROM baton.enqueue(...)` and the DELETE of the entry, on one connection, under a session
 * row of its own) and beside PostgreSQL's own advisory lock (a lock and an unlock statement).
 */
export const postgresCycle: Case = {
  name: 'postgres.cycle',
  async run({ postgres, size, report }) {
    const url = await postgres();
    const session = await connect(withNamespace(url, 'bench'), { sessionTimeoutMs: 10_000 });
    const raw = await client(url);
    try {
      // The floor's session: a lease long enough for the run, its row removed at the end.
      const row = String(
        (await raw.query<{ id: string }>('SELECT baton.open_session(3600000, $1) AS id', ['bench floor'])).rows[0]!.id,
      );
      let n = 0;
      const floorCycle = async (queue: string): Promise<void> => {
        const key = `floor${row}.${(n += 1)}`;
        await raw.query('SELECT * FROM baton.enqueue($1, $2, $3, $4, $5, $6, $7)', [
          row,
          key,
          'bench-raw',
          queue,
          'lock',
          null,
          '',
        ]);
        await raw.query('DELETE FROM baton.entries WHERE key = $1 AND session = $2', [key, row]);
      };
      const mutex = new FairMutex(session, 'cycle');
      const contenders: Record<string, () => Promise<void>> = {
        [POSTGRES_CASES.floor]: () => floorCycle('floor'),
        [POSTGRES_CASES.floorCopy]: () => floorCycle('floor-copy'),
        [POSTGRES_CASES.mutex]: async () => {
          const lock = await mutex.acquire();
          await lock.release();
        },
        [POSTGRES_CASES.advisory]: async () => {
          await raw.query('SELECT pg_advisory_lock($1)', [42]);
          await raw.query('SELECT pg_advisory_unlock($1)', [42]);
        },
      };
      const byBlock = await alternateBlocks(
        Object.fromEntries(Object.entries(contenders).map(([name, cycle]) => [name, timed(cycle)])),
        size,
      );
      const results = Object.entries(flatBlocks(byBlock)).map(([name, values]) => summarize(name, values));
      const find = (name: string): Summary => results.find((r) => r.name === name)!;
      const before = postgresCounters.statements;
      await timed(contenders[POSTGRES_CASES.mutex]!)(COUNTED);
      const statements = (postgresCounters.statements - before) / COUNTED;
      await raw.query('DELETE FROM baton.sessions WHERE id = $1', [row]);

      heading('9. PostgreSQL uncontended cycle (standalone, fsync on)');
      printCases(results, { floor: find(POSTGRES_CASES.floor), advisory: find(POSTGRES_CASES.advisory) });
      printFigures('', { 'statements per FairMutex cycle (request connection)': statements.toFixed(2) });
      const mutexMs = find(POSTGRES_CASES.mutex).medianMs;
      const floorMs = find(POSTGRES_CASES.floor).medianMs;
      const interval = ratioInterval(byBlock[POSTGRES_CASES.mutex]!, byBlock[POSTGRES_CASES.floor]!);
      const copy = find(POSTGRES_CASES.floorCopy).medianMs / floorMs;
      report.info(
        9,
        'PostgreSQL FairMutex cycle, median / p99',
        mutexMs,
        `${mutexMs.toFixed(3)} / ${find(POSTGRES_CASES.mutex).p99Ms.toFixed(3)} ms`,
      );
      report.exactly(9, 'PostgreSQL statements per FairMutex cycle', statements, 2, fixed(2));
      report.atMost(
        9,
        'PostgreSQL FairMutex / raw floor (same two statements)',
        mutexMs / floorMs,
        1.1,
        times,
        `(95% ${timesRange(interval)})`,
      );
      report.info(9, "PostgreSQL the floor's identical copy / the floor", copy, `${times(copy)} (this run's noise)`);
      report.info(
        9,
        'PostgreSQL FairMutex / pg_advisory_lock+unlock',
        mutexMs / find(POSTGRES_CASES.advisory).medianMs,
        times(mutexMs / find(POSTGRES_CASES.advisory).medianMs),
      );
      return { results, statements, interval };
    } finally {
      await session.close();
      await raw.end();
    }
  },
};

/** One block of every contender process of a kind on one lock at once. */
async function contendBlock(contenders: readonly LineProcess[], ms: number): Promise<Contention> {
  const answers = await Promise.all(contenders.map((c) => c.ask(`contend ${ms}`)));
  return analyse(answers.map((answer) => JSON.parse(answer) as ContenderReport));
}

/**
 * 8 processes on one lock, holding it for no time: baton's FairMutex (each process a session) and
 * PostgreSQL's advisory lock (each process one connection blocked in pg_advisory_lock), in
 * alternating blocks.
 */
export const postgresContended: Case = {
  name: 'postgres.contended',
  async run({ postgres, quick, report }) {
    const url = await postgres();
    const blocks = quick ? 2 : 6;
    const blockMs = quick ? 1_500 : 2_000;
    const started: LineProcess[][] = [];
    try {
      const baton = await startAll(
        (i) => nodeWorker('contender.js', [withNamespace(url, 'bench'), 'contended'], `baton contender ${i}`),
        PROCESSES,
      );
      started.push(baton);
      const advisory = await startAll(
        (i) => nodeWorker('contender.js', [`advisory+${url}`, 'contended'], `advisory contender ${i}`),
        PROCESSES,
      );
      started.push(advisory);
      const measured: { baton: Contention[]; advisory: Contention[] } = { baton: [], advisory: [] };
      await contendBlock(baton, 500); // warm-up
      await contendBlock(advisory, 500);
      for (let block = 0; block < blocks; block += 1) {
        const order = block % 2 === 0 ? (['baton', 'advisory'] as const) : (['advisory', 'baton'] as const);
        for (const kind of order) measured[kind].push(await contendBlock(kind === 'baton' ? baton : advisory, blockMs));
        await sleep(50);
      }
      const batonAll = combine(measured.baton);
      const rates = { baton: medianRate(measured.baton), advisory: medianRate(measured.advisory) };
      heading(`10. PostgreSQL contended: ${PROCESSES} processes on one lock`);
      printFigures(`${blocks} blocks of ${blockMs} ms each, alternating:`, {
        'baton FairMutex acquisitions/s (median of blocks)': rates.baton.toFixed(0),
        'pg_advisory_lock acquisitions/s (median of blocks)': rates.advisory.toFixed(0),
        'baton grants out of queue order': String(batonAll.outOfOrder),
        'baton grants overlapping the previous hold': String(batonAll.overlaps),
      });
      report.info(
        10,
        `PostgreSQL FairMutex acquisitions/s, ${PROCESSES} processes`,
        rates.baton,
        rates.baton.toFixed(0),
      );
      report.info(
        10,
        `pg_advisory_lock acquisitions/s, ${PROCESSES} processes`,
        rates.advisory,
        rates.advisory.toFixed(0),
      );
      report.holds(
        10,
        'PostgreSQL FairMutex strict FIFO, no overlap',
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

/** 50 waiters queued, one release: how many notifications reach the waiters' process. */
export const postgresHerd: Case = {
  name: 'postgres.herd',
  async run(context) {
    const url = await context.postgres();
    const herd = await batonHerd(withNamespace(url, 'bench'), {
      armed: async () => {
        const deadline = performance.now() + 30_000;
        while (postgresWatches.size < HERD) {
          if (performance.now() > deadline) throw new Error(`herd: ${HERD} LISTENs not reached`);
          await sleep(5);
        }
      },
      notifications: () => postgresCounters.notifications,
    });
    reportHerd(context, 'PostgreSQL', herd);
    return herd;
  },
};
