/**
 * SVG charts of a bench run, drawn with Vega-Lite in Node (no browser: a headless Vega view
 * renders straight to an SVG string). Vega and Vega-Lite are dev dependencies, imported
 * dynamically so the library itself never needs them.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { TopLevelSpec } from 'vega-lite';
import { efficiencySpec } from './efficiency-chart.js';
import type { CellResult } from './types.js';

const WIDTH = 360;
const HEIGHT = 240;
/** Tick values for the symlog millisecond axes (a symlog axis picks few ticks by itself). */
const MS_TICKS = [0, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000];

async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const [vega, vegaLite] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** (a) Main-thread event-loop delay by executor under CPU-heavy tools (or the blocking parse tool): p50, p99 and max. */
export function eventLoopDelaySpec(cells: readonly CellResult[], workload: 'cpu' | 'parse' = 'cpu'): TopLevelSpec {
  const values = cells
    .filter((c) => c.workload === workload)
    .flatMap((c) => [
      { executor: c.executor, stat: 'p50', ms: c.eldP50Ms },
      { executor: c.executor, stat: 'p99', ms: c.eldP99Ms },
      { executor: c.executor, stat: 'max', ms: c.eldMaxMs },
    ]);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `Main-thread event-loop delay, ${workload === 'cpu' ? 'CPU-heavy tools' : 'a tool that blocks (code_outline)'}`,
      subtitle: 'how late a 1 ms timer fired (symlog scale; lower is better)',
    },
    width: WIDTH,
    height: HEIGHT,
    background: 'white',
    data: { values },
    mark: { type: 'bar' },
    encoding: {
      x: { field: 'executor', type: 'nominal', sort: null, title: null, axis: { labelAngle: -20 } },
      xOffset: { field: 'stat', sort: ['p50', 'p99', 'max'] },
      y: { field: 'ms', type: 'quantitative', scale: { type: 'symlog', constant: 0.1 }, title: 'delay (ms)', axis: { values: MS_TICKS, format: '~g' } },
      color: { field: 'stat', type: 'nominal', sort: ['p50', 'p99', 'max'], title: null },
      tooltip: [{ field: 'executor' }, { field: 'stat' }, { field: 'ms', format: '.2f' }],
    },
  };
}

/** (b) Throughput and peak RSS against fan-out (I/O-bound and scale workloads), per executor. */
export function throughputMemorySpec(cells: readonly CellResult[]): TopLevelSpec {
  const values = cells
    .filter((c) => c.workload === 'io' || c.workload === 'scale')
    .map((c) => ({ series: `${c.executor} · ${c.workload}`, jobs: c.jobs, jobsPerSec: c.jobsPerSec, peakRssMb: c.peakRssMb }));
  const panel = (field: string, title: string) => ({
    width: WIDTH,
    height: HEIGHT,
    mark: { type: 'line' as const, point: true },
    encoding: {
      x: { field: 'jobs', type: 'quantitative' as const, scale: { type: 'log' as const }, title: 'jobs in the fan-out (log)' },
      y: { field, type: 'quantitative' as const, scale: { type: 'log' as const }, title },
      color: { field: 'series', type: 'nominal' as const, title: 'executor · workload', legend: { labelLimit: 400 } },
    },
  });
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Throughput and peak memory against fan-out', subtitle: 'io: the same cap at every fan-out; scale: every job in flight at once' },
    background: 'white',
    data: { values },
    hconcat: [panel('jobsPerSec', 'jobs per second (log)'), panel('peakRssMb', 'peak RSS, MB (log)')],
  };
}

/** (c) The parent's own request latency (p99) by executor and workload. */
export function responsivenessSpec(cells: readonly CellResult[]): TopLevelSpec {
  const values = cells.map((c) => ({ executor: c.executor, cell: `${c.workload} ${c.jobs}`, ms: c.respP99Ms }));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: "The parent's own request while jobs run", subtitle: 'p99 round trip of a small GET every 50 ms (symlog scale; lower is better)' },
    width: WIDTH + 120,
    height: HEIGHT,
    background: 'white',
    data: { values },
    mark: { type: 'bar' },
    encoding: {
      x: { field: 'cell', type: 'nominal', sort: null, title: null, axis: { labelAngle: -20 } },
      xOffset: { field: 'executor', sort: null },
      y: { field: 'ms', type: 'quantitative', scale: { type: 'symlog', constant: 1 }, title: 'p99 round trip (ms)', axis: { values: MS_TICKS, format: '~g' } },
      color: { field: 'executor', type: 'nominal', sort: null, title: null },
    },
  };
}

/**
 * Writes the charts for which the run has data into `outDir` as `<name>-<chart>.svg`; returns
 * the file names. Throws only if Vega cannot be loaded (it is a dev dependency).
 */
export async function writeCharts(cells: readonly CellResult[], outDir: string, name: string): Promise<string[]> {
  const wanted: Array<[string, TopLevelSpec, boolean]> = [
    ['event-loop-delay-cpu', eventLoopDelaySpec(cells), cells.some((c) => c.workload === 'cpu')],
    ['event-loop-delay-parse', eventLoopDelaySpec(cells, 'parse'), cells.some((c) => c.workload === 'parse')],
    ['throughput-memory', throughputMemorySpec(cells), cells.some((c) => c.workload === 'io' || c.workload === 'scale')],
    ['responsiveness', responsivenessSpec(cells), cells.length > 0],
    ['efficiency', efficiencySpec(cells), cells.some((c) => c.efficiency !== null)],
  ];
  const written: string[] = [];
  for (const [chart, spec, hasData] of wanted) {
    if (!hasData) continue;
    const file = `${name}-${chart}.svg`;
    await writeFile(path.join(outDir, file), await renderSvg(spec));
    written.push(file);
  }
  return written;
}
