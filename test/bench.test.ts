/**
 * The bench still works: the quick matrix runs end to end (cells in their own processes, the
 * simulator in another) and writes its JSON, markdown and SVG charts. No timing is asserted:
 * these are numbers to read, not thresholds. The test's own time limit is a hang net, set far
 * beyond the minute or two the quick matrix takes, since a loaded machine stretches it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cellFailure, runBench } from '../src/bench/run.js';
import { checkTargets } from '../src/bench/report.js';
import type { BenchReport, CellResult } from '../src/bench/types.js';
import { planWorkloads } from '../src/bench/workloads.js';

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
  return { ...zero, workload: 'scale', executor: 'inline', jobs: 10_000, delivered: 10_000, ok: 10_000, peakRssMb: 500, notes: [], warmStartP50Ms: null, cancelCoopP50Ms: null, cancelHardP50Ms: null, ...over };
}

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

describe('bench --quick', () => {
  it('runs every executor × workload cell and writes JSON, markdown and SVG charts', { timeout: 600_000 }, async () => {
    const { report, files } = await runBench({ quick: true, outDir, name: 'test', log: () => {} });

    const json = JSON.parse(readFileSync(path.join(outDir, 'test.json'), 'utf8')) as BenchReport;
    expect(json.errors).toEqual([]);
    expect(json.cells).toHaveLength(report.cells.length);

    for (const plan of planWorkloads(true)) {
      for (const jobs of plan.fanouts) {
        for (const executor of plan.executors) {
          const cell = json.cells.find((c) => c.workload === plan.name && c.jobs === jobs && c.executor === executor);
          expect(cell, `${plan.name} ${jobs} ${executor}`).toBeDefined();
          for (const field of NUMERIC) expect(Number.isFinite(cell?.[field]), `${plan.name} ${jobs} ${executor}: ${field}`).toBe(true);
          for (const field of NUMERIC_OR_NULL) {
            const value = cell?.[field];
            expect(value === null || Number.isFinite(value), `${plan.name} ${jobs} ${executor}: ${field}`).toBe(true);
          }
          // Jobs that ended but failed are not a working bench: every job must end `ok`.
          expect(cell?.delivered).toBe(jobs);
          expect(cell?.ok, `${plan.name} ${jobs} ${executor}: ok jobs (notes: ${cell?.notes.join('; ')})`).toBe(jobs);
          if (executor === 'inline') expect(cell?.cancelHardP50Ms).toBeNull();
        }
      }
    }

    const md = readFileSync(path.join(outDir, 'test.md'), 'utf8');
    expect(md).toContain('| workload | jobs | executor |');
    expect(md).toContain('## Targets');
    const svgs = files.filter((f) => f.endsWith('.svg'));
    expect(svgs.map((f) => path.basename(f)).sort()).toEqual(['test-event-loop-delay-cpu.svg', 'test-event-loop-delay-parse.svg', 'test-responsiveness.svg', 'test-throughput-memory.svg']);
    for (const file of svgs) {
      expect(existsSync(file)).toBe(true);
      expect(readFileSync(file, 'utf8')).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
    }
  });
});
