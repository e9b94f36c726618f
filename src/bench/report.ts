/**
 * The bench's markdown: one table of every cell with ratios against `inline` at the same
 * workload and fan-out, and the issue's targets, each marked met or missed.
 */
import { parseTargets } from './parse-workload.js';
import { peersSection } from './peers/report.js';
import type { BenchReport, CellResult } from './types.js';

const MB_LIMIT = 2_048;

export function fmt(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(digits);
}

/** `value / base`, as "1.02×"; a dash when either is missing or the base is 0. */
export function ratio(value: number | null | undefined, base: number | null | undefined): string {
  if (value == null || base == null || !Number.isFinite(value) || !Number.isFinite(base) || base === 0) return '—';
  const r = value / base;
  if (r >= 100) return `${Math.round(r).toLocaleString('en-US')}×`;
  return `${r >= 10 ? r.toFixed(1) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2)}×`;
}

/** An efficiency (ideal ÷ measured) as a percentage. */
export function percent(value: number | null | undefined): string {
  return value == null || !Number.isFinite(value) ? '—' : `${Math.round(value * 100)}%`;
}

/** The hard-stop figure: ms, "not stopped after 10 s" (an in-process peer), or n/a (inline has no hard stop). */
export function hardCancel(c: CellResult): string {
  if (c.cancelHardUnstopped) return 'not stopped after 10 s';
  return c.executor === 'inline' ? 'n/a' : fmt(c.cancelHardP50Ms, 1);
}

/** The inline cell of the same workload and fan-out, if it ran. */
export function inlineOf(cells: readonly CellResult[], cell: CellResult): CellResult | undefined {
  return cells.find((c) => c.executor === 'inline' && c.workload === cell.workload && c.jobs === cell.jobs);
}

const HEADER = [
  'workload',
  'jobs',
  'executor',
  'wall s',
  'wall ×inline',
  'ideal s',
  'efficiency',
  'jobs/s',
  'latency p50/p95/p99 ms',
  'loop delay p50/p99/max ms',
  'delay p99 ×inline',
  'parent req p50/p99 ms',
  'spawn p99 ms',
  'warm start p50 ms',
  'cancel coop/hard ms',
  'peak RSS MB',
  'RSS ×inline',
  'threads',
  'ok/jobs',
];

export function markdownTable(cells: readonly CellResult[]): string {
  const rows = cells.map((c) => {
    const base = inlineOf(cells, c);
    return [
      c.workload,
      c.jobs.toLocaleString('en-US'),
      c.executor,
      fmt(c.wallMs / 1000, 2),
      c.executor === 'inline' ? '1.00×' : ratio(c.wallMs, base?.wallMs),
      c.idealMs == null ? '—' : fmt(c.idealMs / 1000, 2),
      percent(c.efficiency),
      fmt(c.jobsPerSec, 1),
      `${fmt(c.latencyP50Ms, 0)} / ${fmt(c.latencyP95Ms, 0)} / ${fmt(c.latencyP99Ms, 0)}`,
      `${fmt(c.eldP50Ms, 2)} / ${fmt(c.eldP99Ms, 2)} / ${fmt(c.eldMaxMs, 1)}`,
      c.executor === 'inline' ? '1.00×' : ratio(c.eldP99Ms, base?.eldP99Ms),
      `${fmt(c.respP50Ms, 1)} / ${fmt(c.respP99Ms, 1)}`,
      fmt(c.spawnP99Ms, 3),
      fmt(c.warmStartP50Ms, 2),
      `${fmt(c.cancelCoopP50Ms, 1)} / ${hardCancel(c)}`,
      fmt(c.peakRssMb, 0),
      c.executor === 'inline' ? '1.00×' : ratio(c.peakRssMb, base?.peakRssMb),
      String(c.threadsMax),
      `${c.ok}/${c.jobs}${c.toolErrors > 0 ? ` (${c.toolErrors.toLocaleString('en-US')} tool errors)` : ''}`,
    ];
  });
  const line = (cols: string[]) => `| ${cols.join(' | ')} |`;
  return [line(HEADER), line(HEADER.map(() => '---')), ...rows.map(line)].join('\n');
}

export interface TargetCheck {
  target: string;
  executor: string;
  value: string;
  met: boolean | null;
}

/** The issue's targets, per executor, from whatever cells ran (a missing cell gives `met: null`). */
export function checkTargets(cells: readonly CellResult[]): TargetCheck[] {
  const out: TargetCheck[] = [];
  const maxJobs = (workload: string) => Math.max(0, ...cells.filter((c) => c.workload === workload).map((c) => c.jobs));
  const ioJobs = maxJobs('io');
  for (const c of cells.filter((x) => x.workload === 'io' && x.jobs === ioJobs && x.executor !== 'inline')) {
    const base = inlineOf(cells, c);
    const delta = base ? (c.wallMs / base.wallMs - 1) * 100 : Number.NaN;
    out.push({
      target: `io ${ioJobs} jobs: wall time within 2% of inline`,
      executor: c.executor,
      value: `${delta >= 0 ? '+' : ''}${fmt(delta, 1)}%`,
      met: base ? Math.abs(delta) <= 2 || delta < 0 : null,
    });
  }
  for (const c of cells.filter((x) => x.workload === 'cpu')) {
    const base = inlineOf(cells, c);
    const times = base && c.executor !== 'inline' ? ` (inline/this: ${ratio(base.eldP99Ms, c.eldP99Ms)})` : '';
    out.push({ target: 'cpu: main-thread loop delay p99 ≤ 5 ms', executor: c.executor, value: `${fmt(c.eldP99Ms, 2)} ms${times}`, met: c.eldP99Ms <= 5 });
  }
  // spawn() p99 where it has the most samples: the largest io fan-out (mostly queued spawns) and
  // the largest scale fan-out (every spawn also launches its job).
  for (const workload of ['io', 'scale']) {
    const jobs = maxJobs(workload);
    for (const c of cells.filter((x) => x.workload === workload && x.jobs === jobs)) {
      out.push({
        target: `spawn() p99 < 0.2 ms (${workload} ${jobs.toLocaleString('en-US')} spawns)`,
        executor: c.executor,
        value: `${fmt(c.spawnP99Ms, 3)} ms (p50 ${fmt(c.spawnP50Ms, 3)})`,
        met: c.spawnP99Ms < 0.2,
      });
    }
  }
  const executors = [...new Set(cells.map((c) => c.executor))];
  for (const executor of executors) {
    const mine = cells.filter((c) => c.executor === executor);
    const median = (values: Array<number | null>) => {
      const v = values.filter((x): x is number => x !== null).sort((a, b) => a - b);
      return v.length ? (v[Math.floor((v.length - 1) / 2)] as number) : null;
    };
    const warm = median(mine.map((c) => c.warmStartP50Ms));
    out.push({ target: 'warm start p50 < 2 ms (median of cells)', executor, value: `${fmt(warm, 2)} ms`, met: warm === null ? null : warm < 2 });
    const coop = median(mine.map((c) => c.cancelCoopP50Ms));
    out.push({ target: 'cooperative cancel < 50 ms (median of cells)', executor, value: `${fmt(coop, 1)} ms`, met: coop === null ? null : coop < 50 });
    if (executor !== 'inline') {
      const hard = median(mine.map((c) => c.cancelHardP50Ms));
      // An in-process peer cannot stop a job stuck in synchronous code: a miss, not a missing figure.
      const unstopped = mine.some((c) => c.cancelHardUnstopped);
      out.push({
        target: 'hard stop < 250 ms (median of cells)',
        executor,
        value: unstopped ? 'not stopped after 10 s' : `${fmt(hard, 1)} ms`,
        met: unstopped ? false : hard === null ? null : hard < 250,
      });
    }
  }
  out.push(...parseTargets(cells));
  const scaleJobs = maxJobs('scale');
  for (const c of cells.filter((x) => x.workload === 'scale' && x.jobs === scaleJobs)) {
    out.push({
      target: `scale ${scaleJobs.toLocaleString('en-US')} concurrent: RSS ≤ 2 GB, all delivered and ok`,
      executor: c.executor,
      value: `${fmt(c.peakRssMb, 0)} MB, ${c.delivered}/${c.jobs} delivered, ${c.ok} ok`,
      // Delivered is not enough: a job that failed was delivered too (7,500 of 10,000 ok once passed).
      met: c.peakRssMb <= MB_LIMIT && c.delivered === c.jobs && c.ok === c.jobs,
    });
  }
  return out;
}

export function targetsTable(checks: readonly TargetCheck[]): string {
  const mark = (met: boolean | null) => (met === null ? '?' : met ? 'met' : 'MISSED');
  return [
    '| target | executor | value | |',
    '| --- | --- | --- | --- |',
    ...checks.map((t) => `| ${t.target} | ${t.executor} | ${t.value} | ${mark(t.met)} |`),
  ].join('\n');
}

export function markdownReport(report: BenchReport, charts: readonly string[]): string {
  const m = report.machine;
  const lines = [
    `# forkpool bench: ${report.name}${report.quick ? ' (quick)' : ''}`,
    '',
    `${report.startedAt} · ${m.cpus} × ${m.cpuModel} · ${m.memGb} GB · Node ${m.node} · ${m.platform}${m.openFilesLimit !== undefined ? ` · open-file limit ${m.openFilesLimit}` : ''}`,
    '',
    '## Workloads',
    '',
    ...Object.entries(report.workloads).map(
      ([name, w]) =>
        `- **${name}**: ${w.description} (sim: ${Object.entries(w.sim)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')})`,
    ),
    '',
    '## Results',
    '',
    markdownTable(report.cells),
    '',
    'Ratios are against `inline` at the same workload and fan-out, in the same run. Loop delay: how late a 1 ms',
    'timer fired on the main thread. Parent req: round trip of a GET the main thread makes every 50 ms.',
    'Cancel: cooperative = a job waiting on its model; hard = a job spinning in synchronous code (grace 0).',
    '',
    ...peersSection(report),
    '## Targets',
    '',
    targetsTable(checkTargets(report.cells)),
  ];
  if (report.errors.length > 0) {
    lines.push('', '## Cells that failed', '', ...report.errors.map((e) => `- ${e.workload} ${e.jobs} ${e.executor}: ${e.message.split('\n')[0]}`));
  }
  if (report.skipped.length > 0) {
    lines.push('', '## Cells left out', '', ...report.skipped.map((s) => `- ${s.workload} ${s.jobs} ${s.executor}: ${s.reason}`));
  }
  const notes = report.cells.filter((c) => c.notes.length > 0);
  if (notes.length > 0) lines.push('', '## Notes', '', ...notes.map((c) => `- ${c.workload} ${c.jobs} ${c.executor}: ${c.notes.join('; ')}`));
  if (charts.length > 0) lines.push('', '## Charts', '', ...charts.map((file) => `![${file}](${file})`));
  return `${lines.join('\n')}\n`;
}
