import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../../harness/wait.js';
import { ALERT_RULES, DASHBOARD, type PrometheusRun, runnable, startPrometheusRun } from './support/prometheus-run.js';

interface Dashboard {
  readonly panels: readonly { readonly title: string; readonly targets: readonly { readonly expr: string }[] }[];
}

/** Every alert's name and expression (the rules file writes each expression on one line). */
function alertExpressions(): { alert: string; expr: string }[] {
  const text = readFileSync(ALERT_RULES, 'utf8');
  return [...text.matchAll(/- alert: (\S+)\n(?:\s*#.*\n)*\s*expr: (.+)\n/g)].map((m) => ({
    alert: m[1]!,
    expr: m[2]!,
  }));
}

/** Waits until `expr` returns at least one series; bounded (the run's first minute fills the rates). */
async function returnsData(run: PrometheusRun, expr: string): Promise<number> {
  let found = 0;
  await eventually(`data for ${expr}`, async () => (found = (await run.query(expr)).length) > 0, 60_000);
  return found;
}

describe('the alerting rules under promtool', () => {
  it('pass promtool check rules and their unit tests (promtool test rules)', () => {
    const check = spawnSync('promtool', ['check', 'rules', ALERT_RULES], { encoding: 'utf8', timeout: 60_000 });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain('SUCCESS: 7 rules found');
    const unit = ALERT_RULES.replace(/\.yml$/, '.test.yml');
    const test = spawnSync('promtool', ['test', 'rules', unit], { encoding: 'utf8', timeout: 60_000 });
    expect(test.status, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toContain('SUCCESS');
  });
});

describe('the dashboard and the alerts against a real Prometheus scraping a process that takes locks', () => {
  let run: PrometheusRun;
  beforeAll(async () => {
    run = await startPrometheusRun();
  }, 60_000);
  afterAll(async () => {
    await run?.stop();
  });

  it('the lock variable lists the locks taken', async () => {
    const locks = async (): Promise<string[]> =>
      (await run.query('count by (lock) (baton_lock_wait_seconds_bucket)')).map((s) => s.metric['lock'] ?? '');
    await eventually('the locks', async () => (await locks()).length >= 3, 60_000);
    expect((await locks()).sort()).toEqual(expect.arrayContaining(['inventory', 'payments/settlement', 'scheduler']));
  }, 90_000);

  it('every query of every dashboard panel returns data', async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
    const targets = dashboard.panels.flatMap((panel) =>
      panel.targets.map((t) => ({ panel: panel.title, expr: t.expr })),
    );
    expect(targets.length).toBeGreaterThanOrEqual(11);
    for (const { expr } of targets) expect(await returnsData(run, runnable(expr)), expr).toBeGreaterThan(0);
  }, 180_000);

  it('every alert expression returns data (thresholds at zero)', async () => {
    const alerts = alertExpressions();
    expect(alerts.map((a) => a.alert)).toHaveLength(7);
    for (const { expr } of alerts) expect(await returnsData(run, runnable(expr, true)), expr).toBeGreaterThan(0);
  }, 180_000);

  it('Prometheus loaded the alerting rules and evaluates them', async () => {
    const response = await fetch(`${run.url}/api/v1/rules?type=alert`);
    const body = (await response.json()) as { data: { groups: { rules: { name: string; health: string }[] }[] } };
    const rules = body.data.groups.flatMap((g) => g.rules);
    expect(rules).toHaveLength(7);
    await eventually(
      'every rule evaluated',
      async () => {
        const again = (await (await fetch(`${run.url}/api/v1/rules?type=alert`)).json()) as typeof body;
        return again.data.groups.flatMap((g) => g.rules).every((r) => r.health === 'ok');
      },
      30_000,
    );
  }, 60_000);
});
