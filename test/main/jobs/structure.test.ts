/**
 * Issue 39: the jobs room's shape. No two modules of src/main/jobs import each other, even
 * through others or for types only (job ↔ steering and job-table ↔ resumes were such circles);
 * the manager keeps the embedder's verbs and the parent's go through its one `parentControls`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackgroundManager, ParentControls } from '../../../src/main/jobs/manager.js';

const JOBS = path.resolve(import.meta.dirname, '../../../src/main/jobs');

/** Each module of the folder and the modules of the folder it imports (`import`, `import type`, `export … from`). */
function importsOf(folder: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of readdirSync(folder).filter((name) => name.endsWith('.ts'))) {
    const text = readFileSync(path.join(folder, file), 'utf8');
    const targets = [...text.matchAll(/\bfrom\s+'\.\/([\w-]+)\.js'/g)].map((match) => `${match[1]}.ts`);
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Every circle, as the path from a module back to itself (each reported once, from its first module in name order). */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const seen = new Set<string>();
  for (const start of [...graph.keys()].sort()) {
    const walk = (node: string, trail: string[]): void => {
      for (const next of graph.get(node) ?? []) {
        if (next === start) found.push([...trail, start]);
        else if (!trail.includes(next) && !seen.has(next) && next > start) walk(next, [...trail, next]);
      }
    };
    walk(start, [start]);
    seen.add(start);
  }
  return found;
}

describe('the jobs room', () => {
  it('has no import circle: no module of src/main/jobs reaches itself through its imports', () => {
    const graph = importsOf(JOBS);
    // The reader must see the folder: the facade imports its engine, the engine its parts.
    expect(graph.get('manager.ts')).toContain('engine.ts');
    expect(graph.get('engine.ts')).toContain('engine-parts.ts');
    expect(circles(graph)).toEqual([]);
  });

  it("finds a circle when there is one (the check's own check)", () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(circles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  });

  it("keeps the embedder's verbs on the manager; send, wait, resume, worktrees and speculation are its parentControls'", () => {
    const manager = Object.getOwnPropertyNames(BackgroundManager.prototype);
    const controls = Object.getOwnPropertyNames(ParentControls.prototype);
    for (const verb of ['spawn', 'spawnReady', 'cancel', 'restart', 'result', 'jobs', 'get', 'find', 'approve', 'close', 'destroy'])
      expect(manager).toContain(verb);
    const parents = ['send', 'wait', 'resume', 'worktree', 'worktreeAction', 'keepSpeculative', 'dropSpeculative'];
    for (const verb of parents) expect(controls).toContain(verb);
    // Each lives in one place; what only tests used is no public member any more.
    expect(manager.filter((name) => [...parents, 'completeAttempt', 'owner'].includes(name))).toEqual([]);
  });
});
