// A process that takes locks for Prometheus to scrape: contended mutexes with waits and holds of
// varied length, timeouts, a queue, holds past their holdWarningMs, a leader election, and every few
// seconds a session lost while it holds a lock. Serves baton-locks/metrics at /metrics on 127.0.0.1;
// on the port given as argv[2]. Runs until killed; every loop sleeps, so it costs little.
import { createServer } from 'node:http';

import { Registry } from 'prom-client';

import type { Session } from '../../../../recipes/contract.js';
import { LeaderElection } from '../../../../recipes/election.js';
import { LockTimeoutError } from '../../../../recipes/errors.js';
import { FairMutex } from '../../../../recipes/mutex.js';
import { connect } from '../../../../src/connect.js';
import { BatonMetrics } from '../../../../src/metrics.js';
import { expireMemorySession } from '../../../../src/testing.js';

const registry = new Registry();
const metrics = new BatonMetrics({ registry });
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const jitter = (ms: number): number => ms * (0.5 + Math.random());

async function worker(session: Session, lock: string, holdMs: number, timeoutMs = 1_500): Promise<void> {
  const mutex = new FairMutex(session, lock);
  for (;;) {
    try {
      const held = await mutex.acquire({ timeoutMs, holdWarningMs: holdMs });
      await sleep(jitter(holdMs));
      await held.release();
    } catch (error) {
      if (!(error instanceof LockTimeoutError)) return; // the session ended
    }
    await sleep(jitter(50));
  }
}

/** A session that takes a lock and loses it (expired while holding), then is replaced: again and again. */
async function loser(): Promise<void> {
  for (;;) {
    const session = await connect('memory://traffic');
    const stop = metrics.watch(session, { name: 'loser' });
    await new FairMutex(session, 'reports/daily').acquire({ holdWarningMs: 1_000 });
    await sleep(3_000);
    expireMemorySession(session);
    await sleep(500);
    stop();
    await session.close();
  }
}

async function main(): Promise<void> {
  const sessions = await Promise.all([1, 2, 3].map(() => connect('memory://traffic')));
  sessions.forEach((session, i) => metrics.watch(session, { name: `worker-${i + 1}` }));
  for (const session of sessions) {
    void worker(session, 'payments/settlement', 120);
    void worker(session, 'payments/settlement', 120);
    void worker(session, 'inventory', 20);
  }
  void worker(sessions[0]!, 'payments/settlement', 50, 100); // impatient: times out now and then
  void new LeaderElection(sessions[0]!, 'scheduler', { id: 'w-1' }).campaign();
  void loser();
  const server = createServer((request, response) => {
    void registry.metrics().then((text) => {
      response.writeHead(200, { 'content-type': registry.contentType });
      response.end(text);
    });
  });
  server.listen(Number(process.argv[2]), '127.0.0.1');
}

void main();
