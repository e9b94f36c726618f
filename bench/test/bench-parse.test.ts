/**
 * The parse workload's parts: a deterministic tree whose largest files all parse (a file that
 * did not would turn the workload's tool calls into cheap errors), the task that names them, and
 * the target check (threaded loop delay p99 ≤ 5 ms and ≥ 20× under every in-process row).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateSourceTree, parseTargets, parseTask } from '../parse-workload.js';
import type { CellResult } from '../types.js';
import { outlineSource } from '#dist/shared/tools/outline.js';
import { sourcePathsIn } from '#dist/sim/outline-behaviour.js';
import { tempWorkspace, useCleanup } from '../../test/helpers/index.js';

const SHAPE = { files: 120, outlined: 10, minBytes: 800, maxBytes: 30_000 };

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((rel) => statSync(path.join(dir, rel)).isFile())
    .sort();
}

function cell(executor: CellResult['executor'], eldP99Ms: number, threadsMax: number): CellResult {
  return { workload: 'parse', executor, jobs: 16, eldP99Ms, threadsMax } as CellResult;
}

describe('bench parse workload', () => {
  const cleanup = useCleanup();

  it('writes the same tree every time; the named files are the largest, and they all parse', () => {
    const a = tempWorkspace({}, cleanup);
    const b = tempWorkspace({}, cleanup);
    const treeA = generateSourceTree(a, SHAPE);
    const treeB = generateSourceTree(b, SHAPE);
    expect(treeB).toEqual(treeA);
    const files = filesUnder(a);
    expect(files).toHaveLength(SHAPE.files);
    for (const rel of files) expect(readFileSync(path.join(b, rel), 'utf8')).toBe(readFileSync(path.join(a, rel), 'utf8'));

    const sizes = files.map((rel) => ({ rel, bytes: statSync(path.join(a, rel)).size })).sort((x, y) => y.bytes - x.bytes);
    expect(new Set(treeA.largest)).toEqual(new Set(sizes.slice(0, SHAPE.outlined).map((s) => s.rel)));
    for (const rel of treeA.largest) {
      const symbols = outlineSource(readFileSync(path.join(a, rel), 'utf8'), '.ts');
      expect(symbols.filter((s) => s.kind === 'method').length, rel).toBeGreaterThan(0);
    }
    // The sim's agent finds every named file in the task, in order.
    expect(sourcePathsIn(parseTask(treeA.largest))).toEqual(treeA.largest);
  });

  it('the target needs ≤ 5 ms and ≥ 20× under every in-process row', () => {
    const check = (cells: CellResult[]) => parseTargets(cells).map((t) => [t.executor, t.met]);
    expect(check([cell('inline', 200, 0), cell('piscina-thread', 4, 4)])).toEqual([['piscina-thread', true]]);
    // Under 5 ms but only 15× under inline.
    expect(check([cell('inline', 60, 0), cell('piscina-thread', 4, 4)])).toEqual([['piscina-thread', false]]);
    // 40× under inline but over 5 ms.
    expect(check([cell('inline', 240, 0), cell('piscina-shared', 6, 2)])).toEqual([['piscina-shared', false]]);
    // Every in-process row counts, not only inline (a peer that blocks less raises the bar).
    expect(check([cell('inline', 200, 0), { ...cell('inline', 50, 0), executor: 'ai-sdk' }, cell('tinypool', 4, 4)])).toEqual([['tinypool', false]]);
    // No in-process row ran: unknown, not met.
    expect(check([cell('piscina-thread', 1, 4)])).toEqual([['piscina-thread', null]]);
  });
});
