/**
 * The bench's markdown: one table of every cell with ratios against `inline` at the same
 * workload and fan-out, and the issues' targets (issue 24's I/O ratios, RSS per thread and efficiency; the earlier ones), each marked met or missed.
 */
import { fmt, hardCancel, inlineOf, percent, ratio } from './format.js';
import { parseTargets } from './parse-workload.js';
import { peersSection } from './peers/report.js';
import type { BenchReport, CellResult, ExecutorName, TargetCheck } from './types.js';
import { PEER_EXECUTORS } from './types.js';

const MB_LIMIT = 2_048;
/** Issue 24's ceilings on wall time against inline at the largest I/O fan-out. */
const IO_WALL_LIMITS: ReadonlyArray<[ExecutorName, number]> = [
  ['piscina-shared', 1.05],
  ['piscina-thread', 1.3],
];
/** Issue 24: RSS per thread in flight of `thread` isolation, MB. */
const THREAD_MB_LIMIT = 25;
/** Issue 24: `shared`'s efficiency against the ideal on every workload. */
const SHARED_EFFICIENCY_MIN = 0.8;

const HEADER = [
  'workload',
  'jobs',
  'executor',
  'wall s',
  'wall ×inline',
  'ideal s',
  'efficiency',
  'jobs/s',
  'CPU ms/job',
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
      fmt(c.cpuMsPerJob, 1),
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

/** The issue's targets, per executor, from whatever cells ran (a missing cell gives `met: null`). */
export function checkTargets(cells: readonly CellResult[]): TargetCheck[] {
  const out: TargetCheck[] = [];
  const maxJobs = (workload: string) => Math.max(0, ...cells.filter((c) => c.workload === workload).map((c) => c.jobs));
  out.push(...ioTargets(cells, maxJobs('io')), ...efficiencyTargets(cells, maxJobs));
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

/**
 * Issue 24's I/O targets at the largest io fan-out: `inline` no slower than the faster SDK, `shared`
 * and `thread` within their ceilings of inline, and `thread`'s memory per thread: its peak RSS
 * above inline's (the same main thread, jobs and buffers without threads) over its threads.
 */
function ioTargets(cells: readonly CellResult[], jobs: number): TargetCheck[] {
  const at = (executor: ExecutorName) => cells.find((c) => c.workload === 'io' && c.jobs === jobs && c.executor === executor);
  const inline = at('inline');
  const fastestPeer = PEER_EXECUTORS.map(at)
    .filter((c): c is CellResult => c !== undefined)
    .sort((a, b) => a.wallMs - b.wallMs)[0];
  const out: TargetCheck[] = [
    {
      target: `io ${jobs.toLocaleString('en-US')} jobs: inline wall ≤ the faster SDK's`,
      executor: 'inline',
      value:
        fastestPeer && inline
          ? `${fmt(inline.wallMs / 1000, 2)} s, ${fastestPeer.executor} ${fmt(fastestPeer.wallMs / 1000, 2)} s (${ratio(inline.wallMs, fastestPeer.wallMs)})`
          : '—',
      met: fastestPeer && inline ? inline.wallMs <= fastestPeer.wallMs : null,
    },
  ];
  for (const [executor, limit] of IO_WALL_LIMITS) {
    const c = at(executor);
    out.push({
      target: `io ${jobs.toLocaleString('en-US')} jobs: wall ≤ ${limit.toFixed(2)}× inline`,
      executor,
      value: ratio(c?.wallMs, inline?.wallMs),
      met: c && inline ? c.wallMs <= limit * inline.wallMs : null,
    });
  }
  const thread = at('piscina-thread');
  const perThread = thread && inline && thread.threadsMax > 0 ? (thread.peakRssMb - inline.peakRssMb) / thread.threadsMax : null;
  out.push({
    target: `io ${jobs.toLocaleString('en-US')} jobs: RSS per thread ≤ ${THREAD_MB_LIMIT} MB (peak above inline's, over the threads)`,
    executor: 'piscina-thread',
    value: perThread === null ? '—' : `${fmt(perThread, 1)} MB (${fmt(thread?.peakRssMb, 0)} MB, ${thread?.threadsMax} threads)`,
    met: perThread === null ? null : perThread <= THREAD_MB_LIMIT,
  });
  return out;
}

/** `shared`'s efficiency (ideal ÷ wall) at each workload's largest fan-out. */
function efficiencyTargets(cells: readonly CellResult[], maxJobs: (workload: string) => number): TargetCheck[] {
  return cells
    .filter((c) => c.executor === 'piscina-shared' && c.jobs === maxJobs(c.workload))
    .map((c) => ({
      target: `${c.workload} ${c.jobs.toLocaleString('en-US')} jobs: efficiency ≥ ${percent(SHARED_EFFICIENCY_MIN)}`,
      executor: c.executor,
      value: percent(c.efficiency),
      met: c.efficiency === null ? null : c.efficiency >= SHARED_EFFICIENCY_MIN,
    }));
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
