// Renders the dashboard's panels from a real run to docs/observability-dashboard.png: starts the lock
// traffic process and Prometheus (as test/observability/prometheus.test.ts does), lets them run, asks
// Prometheus for each panel's queries over that time, draws the panels as SVG and has rsvg-convert
// (librsvg2-bin) or ImageMagick's convert make the PNG. Run by hand, not in CI:
//   npx tsx test/observability/render-dashboard.ts [seconds, default 120]
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { makeTempDir, removeTempDir } from '../../harness/servers/process.js';
import { DASHBOARD, runnable, type Series, startPrometheusRun } from './support/prometheus-run.js';

const OUT = fileURLToPath(new URL('../../../docs/observability-dashboard.png', import.meta.url));
const [W, H, PAD] = [560, 220, 36];
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

interface Panel {
  readonly title: string;
  readonly type: string;
  readonly targets: readonly { readonly expr: string; readonly legendFormat: string }[];
}

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function legend(format: string, metric: Record<string, string>): string {
  return format.replace(/\{\{(\w+)\}\}/g, (_, name: string) => metric[name] ?? '');
}

/** One panel as an SVG group: lines for a time series, cells for the heat map. */
function drawPanel(
  panel: Panel,
  series: { label: string; points: [number, number][] }[],
  x0: number,
  y0: number,
): string {
  const all = series.flatMap((s) => s.points).filter(([, v]) => Number.isFinite(v));
  const [t0, t1] = [Math.min(...all.map(([t]) => t)), Math.max(...all.map(([t]) => t))];
  const vMax = Math.max(1e-9, ...all.map(([, v]) => v));
  const px = (t: number): number => x0 + PAD + ((t - t0) / Math.max(1, t1 - t0)) * (W - 2 * PAD);
  const py = (v: number): number => y0 + H - PAD + 4 - (v / vMax) * (H - 2 * PAD - 10);
  const parts = [
    `<rect x="${x0 + 4}" y="${y0 + 4}" width="${W - 8}" height="${H - 8}" fill="#181b1f" rx="4"/>`,
    `<text x="${x0 + 14}" y="${y0 + 22}" fill="#d8d9da" font-size="13" font-weight="bold">${escape(panel.title)}</text>`,
    `<text x="${x0 + W - 14}" y="${y0 + 22}" fill="#8e8e8e" font-size="10" text-anchor="end">max ${vMax.toPrecision(3)}</text>`,
  ];
  if (panel.type === 'heatmap') {
    const rows = series.filter((s) => s.label !== '+Inf').sort((a, b) => Number(a.label) - Number(b.label));
    const rowH = (H - 2 * PAD - 10) / Math.max(1, rows.length);
    rows.forEach((row, r) => {
      for (const [t, v] of row.points) {
        const shade = Math.round(255 * Math.min(1, v / vMax));
        parts.push(
          `<rect x="${px(t).toFixed(1)}" y="${(y0 + H - PAD + 4 - (r + 1) * rowH).toFixed(1)}" width="4" height="${rowH.toFixed(1)}" fill="rgb(${shade},${Math.round(shade * 0.55)},20)"/>`,
        );
      }
    });
    parts.push(
      `<text x="${x0 + 14}" y="${y0 + H - 12}" fill="#8e8e8e" font-size="10">buckets ${rows[0]?.label ?? ''} s to ${rows.at(-1)?.label ?? ''} s</text>`,
    );
    return parts.join('\n');
  }
  series.slice(0, COLORS.length).forEach((s, i) => {
    const d = s.points
      .filter(([, v]) => Number.isFinite(v))
      .map(([t, v], j) => `${j === 0 ? 'M' : 'L'}${px(t).toFixed(1)},${py(v).toFixed(1)}`);
    parts.push(`<path d="${d.join('')}" fill="none" stroke="${COLORS[i]}" stroke-width="1.5"/>`);
    parts.push(
      `<text x="${x0 + 14 + (i % 3) * 175}" y="${y0 + H - 24 + Math.floor(i / 3) * 12}" fill="${COLORS[i]}" font-size="10">${escape(s.label.slice(0, 32))}</text>`,
    );
  });
  return parts.join('\n');
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 120);
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
  const run = await startPrometheusRun();
  const dir = makeTempDir('baton-render-');
  try {
    const start = Date.now() / 1_000;
    await new Promise((resolve) => setTimeout(resolve, seconds * 1_000));
    const end = Date.now() / 1_000;
    const groups: string[] = [];
    for (const [i, panel] of dashboard.panels.entries()) {
      const series: { label: string; points: [number, number][] }[] = [];
      for (const target of panel.targets) {
        const answer: Series[] = await run.queryRange(runnable(target.expr), start + 20, end, 2);
        for (const s of answer)
          series.push({
            label: legend(target.legendFormat, s.metric),
            points: (s.values ?? []).map(([t, v]) => [t, Number(v)]),
          });
      }
      groups.push(drawPanel(panel, series, (i % 2) * W, 40 + Math.floor(i / 2) * H));
    }
    const height = 40 + Math.ceil(dashboard.panels.length / 2) * H;
    const svg = [
      `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${height}" font-family="sans-serif">`,
      `<rect width="100%" height="100%" fill="#111217"/>`,
      `<text x="14" y="26" fill="#d8d9da" font-size="16">baton-locks dashboard: ${Math.round(end - start - 20)} s of a real run (dashboards/baton-locks.json)</text>`,
      ...groups,
      '</svg>',
    ].join('\n');
    const file = join(dir, 'dashboard.svg');
    writeFileSync(file, svg);
    const rsvg = spawnSync('rsvg-convert', ['-o', OUT, file]);
    if (rsvg.error !== undefined || rsvg.status !== 0) {
      const convert = spawnSync('convert', [file, OUT], { encoding: 'utf8' });
      if (convert.status !== 0) throw new Error(`neither rsvg-convert nor convert made the PNG: ${convert.stderr}`);
    }
    console.log(`wrote ${OUT}`);
  } finally {
    await run.stop();
    removeTempDir(dir);
  }
}

await main();
