import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { freePort } from '../../../harness/servers/ports.js';
import { makeTempDir, removeTempDir, sleep, startServer, stopPid, tail } from '../../../harness/servers/process.js';

const WORKER = fileURLToPath(new URL('./lock-traffic-worker.ts', import.meta.url));
export const ALERT_RULES = fileURLToPath(new URL('../../../../alerts/baton-alerts.yml', import.meta.url));
export const DASHBOARD = fileURLToPath(new URL('../../../../dashboards/baton-locks.json', import.meta.url));

/** One series of a Prometheus query's answer. */
export interface Series {
  readonly metric: Record<string, string>;
  readonly value?: [number, string];
  readonly values?: [number, string][];
}

/** A real Prometheus (loopback, temp dir) scraping a real process that takes locks, every second. */
export interface PrometheusRun {
  readonly url: string;
  query(expr: string): Promise<Series[]>;
  queryRange(expr: string, startS: number, endS: number, stepS: number): Promise<Series[]>;
  /** Both processes stopped by PID, the temp dir removed. */
  stop(): Promise<void>;
}

export async function startPrometheusRun(): Promise<PrometheusRun> {
  const dir = makeTempDir('baton-prometheus-');
  const [workerPort, promPort] = [await freePort(), await freePort()];
  const worker = startServer(
    process.execPath,
    ['--import', 'tsx', WORKER, String(workerPort)],
    join(dir, 'worker.log'),
  );
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      `rule_files: ['${ALERT_RULES}']`,
      'scrape_configs:',
      `  - { job_name: baton, static_configs: [{ targets: ['127.0.0.1:${workerPort}'] }] }`,
    ].join('\n'),
  );
  const log = join(dir, 'prometheus.log');
  const prometheus = startServer(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    log,
  );
  const url = `http://127.0.0.1:${promPort}`;
  const stop = async (): Promise<void> => {
    await stopPid(prometheus);
    await stopPid(worker);
    removeTempDir(dir);
  };
  try {
    await untilReady(`${url}/-/ready`, log);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    query: async (expr) => api(url, 'query', { query: expr }),
    queryRange: async (expr, start, end, step) =>
      api(url, 'query_range', { query: expr, start: String(start), end: String(end), step: String(step) }),
    stop,
  };
}

async function untilReady(ready: string, log: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(ready)).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`Prometheus did not become ready in 30 s:\n${tail(log)}`);
}

async function api(url: string, endpoint: string, params: Record<string, string>): Promise<Series[]> {
  const response = await fetch(`${url}/api/v1/${endpoint}?${new URLSearchParams(params).toString()}`);
  const body = (await response.json()) as { status: string; error?: string; data?: { result: Series[] } };
  if (body.status !== 'success') throw new Error(`${params['query']}: ${body.error ?? response.status}`);
  return body.data?.result ?? [];
}

/**
 * A dashboard query or alert expression as Prometheus can run it: Grafana's variables replaced (every
 * lock; a one-minute rate window), and for an alert its thresholds set to zero, so that "returns data"
 * means its metrics and labels are right, not that the run happened to breach them.
 */
export function runnable(expr: string, alert = false): string {
  const grafana = expr.replaceAll('$lock', '.*').replaceAll('$__rate_interval', '1m').replaceAll('$__interval', '15s');
  return alert ? grafana.replace(/>\s*\d+(?:\.\d+)?/g, '>= 0') : grafana;
}
