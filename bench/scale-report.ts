import type { Context } from './case.js';
import { fixed, times } from './report.js';
import type { HeldOutcome } from './scale-held.js';
import type { SessionsOutcome } from './scale-sessions.js';
import { ms } from './table.js';

const out = (line: string): void => void process.stdout.write(`${line}\n`);
const cell = (value: number | undefined, format: (v: number) => string): string =>
  value === undefined || !Number.isFinite(value) ? '-' : format(value);
const row = (cells: readonly string[]): void =>
  out(cells.map((c, i) => (i === 0 ? c.padStart(7) : c.padStart(14))).join(''));

/** Case 2's table and summary lines: acquire-all against the floor, heap per lock, idle requests, close. */
export function reportHeld(context: Context, label: string, outcomes: readonly HeldOutcome[]): void {
  out(`\n2. ${label}: N locks held by one session (all acquired at once), the floor on one connection`);
  row(['N', 'acquire-all', 'floor', '/floor', 'heap/lock', 'idle req/s', 'holding req/s', 'close']);
  for (const o of outcomes) {
    if (o.didNotFinish !== undefined) out(`${String(o.n).padStart(7)}  did not finish: ${o.didNotFinish}`);
    const ratio =
      o.acquireAllMs === undefined || o.floorAcquireAllMs === undefined
        ? undefined
        : o.acquireAllMs / o.floorAcquireAllMs;
    row([
      String(o.n),
      cell(o.acquireAllMs, ms),
      cell(o.floorAcquireAllMs, ms),
      cell(ratio, (v) => `${v.toFixed(2)}x`),
      cell(o.heapBytesPerLock, (v) => `${(v / 1024).toFixed(2)}KiB`),
      cell(o.idleEmptyPerSecond, (v) => v.toFixed(2)),
      cell(o.idleHoldingPerSecond, (v) => v.toFixed(2)),
      cell(o.closeMs, ms),
    ]);
    const name = `${label} ${o.n} locks held by one session`;
    if (o.didNotFinish !== undefined)
      context.report.holds(2, name, false, `did not finish: ${o.didNotFinish}`, 'finishes');
    else {
      context.report.info(
        2,
        `${name}: acquire-all / floor`,
        ratio ?? 0,
        `${cell(ratio, times)} (${cell(o.acquireAllMs, ms)}; close ${cell(o.closeMs, ms)}; idle ${cell(o.idleHoldingPerSecond, fixed(1))} req/s)`,
      );
      context.report.atMost(2, `${name}: heap per held lock`, (o.heapBytesPerLock ?? 0) / 1024, 1, fixed(2, ' KiB'));
    }
  }
}

/** Case 3's table and summary lines: idle requests per session against the T/3 floor, idle CPU. */
export function reportSessions(context: Context, label: string, outcomes: readonly SessionsOutcome[]): void {
  out(`\n3. ${label}: N idle sessions in one process`);
  row(['N', 'open all', 'req/s/session', 'T/3 floor', '/floor', 'client cpu', 'server cpu', 'lost']);
  for (const o of outcomes) {
    if (o.didNotFinish !== undefined) {
      out(`${String(o.n).padStart(7)}  did not finish: ${o.didNotFinish}`);
      context.report.holds(
        3,
        `${label} ${o.n} sessions in one process`,
        false,
        `did not finish: ${o.didNotFinish}`,
        'finishes',
      );
      continue;
    }
    const ratio = o.perSessionPerSecond! / o.floorPerSessionPerSecond!;
    const share = (v: number): string => `${(v * 100).toFixed(1)}%`;
    row([
      String(o.n),
      cell(o.openMs, ms),
      cell(o.perSessionPerSecond, (v) => v.toFixed(3)),
      cell(o.floorPerSessionPerSecond, (v) => v.toFixed(3)),
      `${ratio.toFixed(2)}x`,
      cell(o.clientCpuShare, share),
      cell(o.serverCpuShare, share),
      String(o.sessionsLost),
    ]);
    context.report.atMost(
      3,
      `${label} ${o.n} idle sessions: requests per session / T/3 floor`,
      ratio,
      1.5,
      times,
      `(client cpu ${cell(o.clientCpuShare, share)} of a core)`,
    );
  }
}
