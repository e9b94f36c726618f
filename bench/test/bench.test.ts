/**
 * The bench still works: the smoke bench (one quick cell per executor) runs end to end (cells in
 * their own processes, the simulator in another) and writes its JSON, markdown and SVG charts.
 * No timing is asserted: these are numbers to read, not thresholds. The time limit is a hang
 * net, far beyond the half minute the smoke bench takes, since a loaded machine stretches it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cellFailure, runBench } from '../run.js';
import { idealWallMs } from '../ideal.js';
import { checkTargets } from '../report.js';
import { OUR_EXECUTORS, PEER_EXECUTORS, isPeerExecutor, type BenchReport, type Calibration, type CellResult } from '../types.js';
import { SMOKE_CELLS, planWorkloads } from '../workloads.js';

const outDir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-bench-test-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

/** Fields every cell carries as a finite number. */
const NUMERIC: ReadonlyArray<keyof CellResult> = [
  'jobs',
  'concurrency',
  'delivered',
  'ok',
  'toolErrors',
  'wallMs',
  'jobsPerSec',
  'latencyP50Ms',
  'latencyP95Ms',
  'latencyP99Ms',
  'eldP50Ms',
  'eldP99Ms',
  'eldMaxMs',
  'respP50Ms',
  'respP99Ms',
  'spawnP50Ms',
  'spawnP99Ms',
  'peakRssMb',
  'baseRssMb',
  'threadsMax',
];
/** Fields that are a number or null (no sample; `cancelHardP50Ms` is always null for inline). */
const NUMERIC_OR_NULL: ReadonlyArray<keyof CellResult> = ['warmStartP50Ms', 'cancelCoopP50Ms', 'cancelHardP50Ms'];

/** A cell with made-up figures; only the counts matter to the checks below. */
function fakeCell(over: Partial<CellResult>): CellResult {
  const zero = Object.fromEntries(NUMERIC.map((k) => [k, 0])) as unknown as CellResult;
  return {
    ...zero,
    workload: 'scale',
    executor: 'inline',
    jobs: 10_000,
    delivered: 10_000,
    ok: 10_000,
    peakRssMb: 500,
    notes: [],
    warmStartP50Ms: null,
    cancelCoopP50Ms: null,
    cancelHardP50Ms: null,
    cancelHardUnstopped: false,
    idealMs: null,
    efficiency: null,
    ...over,
  };
}

describe('the ideal schedule', () => {
  // One job: 5 model calls of 200 ms and 10 ms of tools on its path; 12 ms of tool CPU in all; 2 cores.
  const calibration: Calibration = { modelCalls: 5, modelLatencyMs: 200, steps: [], toolCpuMs: 12, chainToolMs: 10, cores: 2 };

  it("is the cap's waves of one job each when the model latency dominates", () => {
    expect(idealWallMs(calibration, 1, 50)).toBe(1_010);
    expect(idealWallMs(calibration, 50, 50)).toBe(1_010);
    expect(idealWallMs(calibration, 51, 50)).toBe(2_020);
    expect(idealWallMs(calibration, 1_000, 50)).toBe(20 * 1_010);
  });

  it('is the tool CPU spread over the cores when that is longer', () => {
    const cpuBound: Calibration = { ...calibration, modelLatencyMs: 5, toolCpuMs: 400, chainToolMs: 400 };
    // waves: 3 × (25 + 400) = 1,275 ms; cores: 24 × 400 / 2 = 4,800 ms
    expect(idealWallMs(cpuBound, 24, 8)).toBe(4_800);
  });
});

describe('a peer that cannot stop a job stuck in synchronous code', () => {
  it('misses the hard-stop target with "not stopped after 10 s", not a missing figure', () => {
    const peer = fakeCell({ workload: 'io', executor: 'ai-sdk', jobs: 10, delivered: 10, ok: 10, cancelHardUnstopped: true });
    const target = checkTargets([peer]).find((t) => t.target.startsWith('hard stop'));
    expect(target).toMatchObject({ executor: 'ai-sdk', value: 'not stopped after 10 s', met: false });
  });
});

describe("issue 24's I/O targets", () => {
  const io = (executor: CellResult['executor'], over: Partial<CellResult>) => fakeCell({ workload: 'io', jobs: 1_000, executor, ...over });
  const cells = [
    io('inline', { wallMs: 21_000, peakRssMb: 265 }),
    io('ai-sdk', { wallMs: 20_800 }),
    io('openai-agents', { wallMs: 21_500 }),
    io('piscina-shared', { wallMs: 22_000, efficiency: 0.92 }),
    io('piscina-thread', { wallMs: 28_000, peakRssMb: 1_265, threadsMax: 50 }),
  ];
  const find = (prefix: string, executor: string) => checkTargets(cells).find((t) => t.target.includes(prefix) && t.executor === executor);

  it('inline against the faster SDK, shared and thread against their ceilings of inline', () => {
    expect(find("the faster SDK's", 'inline')).toMatchObject({ met: false, value: expect.stringContaining('ai-sdk 20.80 s') as string });
    expect(find('1.05× inline', 'piscina-shared')).toMatchObject({ met: true, value: '1.05×' });
    expect(find('1.30× inline', 'piscina-thread')).toMatchObject({ met: false, value: '1.33×' });
  });

  it("thread's RSS per thread is its peak above inline's over its threads, and shared's efficiency is checked", () => {
    expect(find('RSS per thread', 'piscina-thread')).toMatchObject({ met: true, value: expect.stringMatching(/^20\.0 MB/) as string });
    expect(find('efficiency ≥ 80%', 'piscina-shared')).toMatchObject({ met: true, value: '92%' });
  });
});

describe('bench targets count ok jobs, not delivered ones', () => {
  it('a scale cell with 7,500 of 10,000 ok misses "all delivered and ok" and is a failed cell', () => {
    const failing = fakeCell({ ok: 7_500 });
    const target = checkTargets([failing]).find((t) => t.target.startsWith('scale'));
    expect(target?.met).toBe(false);
    expect(target?.value).toContain('7500 ok');
    expect(cellFailure(failing)).toMatch(/^7500 of 10000 jobs ended ok/);
    const passing = fakeCell({});
    expect(checkTargets([passing]).find((t) => t.target.startsWith('scale'))?.met).toBe(true);
    expect(cellFailure(passing)).toBeUndefined();
  });
});

describe('the smoke bench (one quick cell per executor)', () => {
  // One run for all: every workload runs and is calibrated, each executor (ours and the peers)
  // in one of them (SMOKE_CELLS); `npm run bench -- --quick` runs the whole quick matrix.
  let outcome: Awaited<ReturnType<typeof runBench>>;
  let json: BenchReport;
  beforeAll(async () => {
    // The cells are child processes: they read it at start. 2 s, not 10, for each peer's stuck job.
    process.env.FORKPOOL_BENCH_HARD_STOP_LIMIT_MS = '2000';
    outcome = await runBench({ smoke: true, outDir, name: 'test', log: () => {} });
    json = JSON.parse(readFileSync(path.join(outDir, 'test.json'), 'utf8')) as BenchReport;
  }, 600_000);

  it('runs every executor once, each cell whole, and writes JSON, markdown and SVG charts', () => {
    expect(json.errors).toEqual([]);
    expect(json.cells).toHaveLength(outcome.report.cells.length);
    // Each executor exactly once; every workload at least once.
    expect(json.cells.map((c) => c.executor).sort()).toEqual([...OUR_EXECUTORS, ...PEER_EXECUTORS].sort());
    for (const plan of planWorkloads(true)) {
      const jobs = plan.fanouts[0] ?? 0;
      for (const executor of SMOKE_CELLS[plan.name].filter((e) => !isPeerExecutor(e))) {
        expect(plan.executors).toContain(executor);
        const cell = cellOf(json, plan.name, jobs, executor);
        if (executor === 'inline') expect(cell.cancelHardP50Ms).toBeNull();
        else {
          expect(cell.cancelHardUnstopped).toBe(false);
          expect(cell.cancelHardP50Ms, `${plan.name} ${jobs} ${executor}: hard stop`).not.toBeNull();
        }
      }
      const calibration = json.calibration?.[plan.name];
      expect(calibration?.modelCalls, `${plan.name}: calibration`).toBeGreaterThanOrEqual(2);
      expect(calibration?.toolCpuMs).toBeGreaterThan(0);
    }

    const md = readFileSync(path.join(outDir, 'test.md'), 'utf8');
    expect(md).toContain('| workload | jobs | executor |');
    expect(md).toContain('## Targets');
    const svgs = outcome.files.filter((f) => f.endsWith('.svg'));
    expect(svgs.map((f) => path.basename(f)).sort()).toEqual([
      'test-efficiency.svg',
      'test-event-loop-delay-cpu.svg',
      'test-event-loop-delay-parse.svg',
      'test-responsiveness.svg',
      'test-throughput-memory.svg',
    ]);
    for (const file of svgs) {
      expect(existsSync(file)).toBe(true);
      expect(readFileSync(file, 'utf8')).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
    }
  });

  it('puts the peers beside our executors, with the same jobs, the same cap, and their hard stop reported', () => {
    // Every workload plans a row for each peer; the io workload is enough to check them.
    for (const plan of planWorkloads(true)) for (const peer of PEER_EXECUTORS) expect(plan.executors).toContain(peer);
    const plan = planWorkloads(true).find((p) => p.name === 'io');
    const jobs = plan?.fanouts[0] ?? 0;
    for (const executor of PEER_EXECUTORS) {
      const cell = cellOf(json, 'io', jobs, executor);
      expect(cell.threadsMax).toBe(0);
      // In-process: nothing stops a job spinning in synchronous code; it is reported, not left out.
      expect(cell.cancelHardUnstopped, `${executor}: hard stop`).toBe(true);
      expect(cell.cancelHardP50Ms).toBeNull();
      expect(cell.cancelCoopP50Ms, `${executor}: cooperative cancel`).not.toBeNull();
      expect(cell.warmStartP50Ms, `${executor}: warm start`).not.toBeNull();
      // The same jobs as forkpool's: as many model calls as the calibration job made.
      expect(cell.modelCallsPerJob, `${executor}: model calls per job`).toBe(json.calibration?.io?.modelCalls);
      // The same cap as forkpool's executors.
      expect(cell.jobsInFlightMax).toBeGreaterThanOrEqual(1);
      expect(cell.jobsInFlightMax, `${executor}: jobs at once`).toBeLessThanOrEqual(cell.concurrency);
    }
    const md = readFileSync(path.join(outDir, 'test.md'), 'utf8');
    expect(md).toContain('## Peers and the ideal schedule');
    expect(md).toMatch(new RegExp(`\\| io \\| ${jobs} \\| inline \\|.*\\| \\d+% \\|`));
    for (const executor of PEER_EXECUTORS)
      expect(md).toMatch(new RegExp(`\\| io \\| ${jobs} \\| ${executor} \\|.*\\| \\d+% \\|.*\\| not stopped after 10 s \\|`));
  });
});

/** The cell of a run, checked for what every cell must hold: every figure a number, every job ok, an ideal time. */
function cellOf(json: BenchReport, workload: string, jobs: number, executor: string): CellResult {
  const cell = json.cells.find((c) => c.workload === workload && c.jobs === jobs && c.executor === executor);
  const name = `${workload} ${jobs} ${executor}`;
  expect(cell, name).toBeDefined();
  for (const field of NUMERIC) expect(Number.isFinite(cell?.[field]), `${name}: ${field}`).toBe(true);
  for (const field of NUMERIC_OR_NULL) {
    const value = cell?.[field];
    expect(value === null || Number.isFinite(value), `${name}: ${field}`).toBe(true);
  }
  // Jobs that ended but failed are not a working bench: every job must end `ok`.
  expect(cell?.delivered).toBe(jobs);
  expect(cell?.ok, `${name}: ok jobs (notes: ${cell?.notes.join('; ')})`).toBe(jobs);
  // The ideal schedule: a positive lower bound, and efficiency is ideal ÷ measured.
  expect(cell?.idealMs, `${name}: idealMs`).toBeGreaterThan(0);
  expect(cell?.efficiency).toBeCloseTo((cell?.idealMs ?? 0) / (cell?.wallMs ?? 1), 2);
  return cell as CellResult;
}
