/**
 * The peers' table: every executor of a cell side by side — forkpool's and the other SDKs' —
 * with the figures a user choosing between them asks for, the ratio against `inline` and the
 * efficiency against the ideal schedule (bench/ideal.ts).
 */
import { fmt, hardCancel, inlineOf, percent, ratio } from '../format.js';
import type { BenchReport, CellResult } from '../types.js';

const HEADER = [
  'workload',
  'jobs',
  'executor',
  'wall s',
  'wall ×inline',
  'ideal s',
  'efficiency',
  'jobs/s',
  'loop delay p99 ms',
  'parent req p99 ms',
  'peak RSS MB',
  'cancel: waiting on model ms',
  'cancel: stuck in sync code ms',
];

export function peersTable(cells: readonly CellResult[]): string {
  const rows = cells.map((c) => [
    c.workload,
    c.jobs.toLocaleString('en-US'),
    c.executor,
    fmt(c.wallMs / 1000, 2),
    c.executor === 'inline' ? '1.00×' : ratio(c.wallMs, inlineOf(cells, c)?.wallMs),
    c.idealMs == null ? '—' : fmt(c.idealMs / 1000, 2),
    percent(c.efficiency),
    fmt(c.jobsPerSec, 1),
    fmt(c.eldP99Ms, 2),
    fmt(c.respP99Ms, 1),
    fmt(c.peakRssMb, 0),
    fmt(c.cancelCoopP50Ms, 1),
    hardCancel(c),
  ]);
  const line = (cols: string[]) => `| ${cols.join(' | ')} |`;
  return [line(HEADER), line(HEADER.map(() => '---')), ...rows.map(line)].join('\n');
}

/** The markdown section: the table, what the columns mean, and the calibration behind the ideal. */
export function peersSection(report: Pick<BenchReport, 'cells' | 'calibration'>): string[] {
  const calibrated = Object.entries(report.calibration ?? {}).map(
    ([workload, c]) =>
      `- ${workload}: ${c.modelCalls} model calls of ${fmt(c.modelLatencyMs, 1)} ms (mean), tool CPU ${fmt(c.toolCpuMs, 1)} ms per job (${fmt(c.chainToolMs, 1)} ms on its critical path), ${c.cores} cores`,
  );
  return [
    '## Peers and the ideal schedule',
    '',
    peersTable(report.cells),
    '',
    '`openai-agents`: @openai/agents 0.9, research agents as tools of an orchestrator (`agent.asTool`), run concurrently by its runner;',
    '`ai-sdk`: ai 6, one `generateText` per job with tools and a step limit, `Promise.all` across jobs. Both in-process, the',
    "same tools, prompt and model as forkpool's jobs, at most the cap at once. A job stuck in synchronous code that is still",
    'running 10 s after its cancel is "not stopped after 10 s". Efficiency = ideal ÷ measured wall time, where',
    'ideal = max(ceil(jobs / cap) × (model calls × mean latency + tool CPU on the critical path), jobs × tool CPU ÷ cores):',
    ...(calibrated.length > 0 ? ['', ...calibrated] : []),
    '',
  ];
}
