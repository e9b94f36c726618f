/**
 * The bench report's efficiency chart keeps every bar inside its plot (issue 36: a cell whose
 * ideal was mis-measured, printed as 238%, drew its bar above the chart's frame). The spec is
 * compiled and laid out by Vega in Node, and each bar's box is read from the scene graph.
 */
import { describe, expect, it } from 'vitest';
import { efficiencySpec } from '../efficiency-chart.js';
import type { CellResult } from '../types.js';

interface SceneItem {
  x: number;
  y: number;
  width: number;
  height: number;
  mark?: { role?: string; marktype?: string };
  items?: SceneItem[];
}

/** Every bar of the chart, with the plot's height. */
async function bars(cells: readonly CellResult[]): Promise<{ plotHeight: number; rects: SceneItem[] }> {
  const [vega, vegaLite] = await Promise.all([import('vega'), import('vega-lite')]);
  const spec = efficiencySpec(cells);
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  await view.runAsync();
  const rects: SceneItem[] = [];
  const walk = (node: SceneItem) => {
    for (const item of node.items ?? []) {
      if (item.mark?.marktype === 'rect' && item.mark.role === 'mark') rects.push(item);
      walk(item);
    }
  };
  // Vega's types leave the scene graph's root untyped.
  walk((view.scenegraph() as unknown as { root: SceneItem }).root);
  view.finalize();
  return { plotHeight: (spec as { height: number }).height, rects };
}

const cell = (executor: string, efficiency: number): CellResult =>
  ({ executor, workload: 'cpu', jobs: 24, efficiency, idealMs: 1000 * efficiency, wallMs: 1000 }) as unknown as CellResult;

describe('the efficiency chart', () => {
  it('a cell at 238% (a mis-measured ideal) stays inside the plot, and so does every other bar', async () => {
    const { plotHeight, rects } = await bars([cell('piscina', 0.91), cell('shared', 2.38), cell('inline', 0.4)]);
    expect(rects).toHaveLength(3);
    for (const rect of rects) {
      const top = Math.min(rect.y, rect.y + rect.height);
      const bottom = Math.max(rect.y, rect.y + rect.height);
      expect(top).toBeGreaterThanOrEqual(0);
      expect(bottom).toBeLessThanOrEqual(plotHeight + 0.5);
    }
    // The tallest bar is drawn whole, not cut at 100%: it reaches higher than the 91% one.
    const heights = rects.map((r) => Math.abs(r.height)).sort((a, b) => a - b);
    expect(heights[2]).toBeGreaterThan((heights[1] ?? 0) * 2);
  });
});
