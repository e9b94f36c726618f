/**
 * Chart of how close each executor came to the ideal schedule (bench/ideal.ts), per cell:
 * efficiency = ideal ÷ measured wall time, forkpool's executors and the peers side by side.
 */
import type { TopLevelSpec } from 'vega-lite';
import type { CellResult } from './types.js';

export function efficiencySpec(cells: readonly CellResult[]): TopLevelSpec {
  const values = cells
    .filter((c) => c.efficiency !== null)
    .map((c) => ({ executor: c.executor, cell: `${c.workload} ${c.jobs}`, efficiency: c.efficiency, idealS: (c.idealMs ?? 0) / 1000, wallS: c.wallMs / 1000 }));
  // Past 1 means the ideal was mis-measured (a calibration error; docs/performance.md): the axis
  // grows to show it, so no bar is drawn outside the chart's frame.
  const top = Math.max(1, ...values.map((v) => v.efficiency ?? 0));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Efficiency against the ideal schedule', subtitle: 'ideal ÷ measured wall time (1 = the limit; higher is better)' },
    width: 480,
    height: 240,
    background: 'white',
    data: { values },
    // Clipped as well: whatever the data, a mark never leaves the plot.
    mark: { type: 'bar', clip: true },
    encoding: {
      x: { field: 'cell', type: 'nominal', sort: null, title: null, axis: { labelAngle: -20 } },
      xOffset: { field: 'executor', sort: null },
      y: { field: 'efficiency', type: 'quantitative', scale: { domain: [0, top], nice: true }, title: 'efficiency', axis: { format: '.0%' } },
      color: { field: 'executor', type: 'nominal', sort: null, title: null },
      tooltip: [
        { field: 'executor' },
        { field: 'cell' },
        { field: 'efficiency', format: '.0%' },
        { field: 'idealS', title: 'ideal s', format: '.2f' },
        { field: 'wallS', title: 'wall s', format: '.2f' },
      ],
    },
  };
}
