/**
 * Issue 39: no import circle anywhere in src (the bench has its own tsconfig and is checked apart).
 * Every static `import … from`, `import type … from` and `export … from` between src modules is an
 * arrow; a strongly connected group of more than one module is a circle. Dynamic `import()` is
 * lazy by design (the CLI loads a command's module when it runs) and is not counted.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Each module and the src modules it imports statically. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)\.js'/gms)]
      .map((match) => path.resolve(path.dirname(file), `${match[1]}.ts`))
      .filter((target) => known.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Tarjan's strongly connected components of more than one module (each a circle or several). */
export function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(node, Math.min(low.get(node)!, index.get(target)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(group.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

describe('the import structure of src', () => {
  it('has no import circle: no module reaches itself through its imports, types included', () => {
    const files = sourceFiles(SRC);
    const graph = importGraph(files);
    // The reader must see the tree: the root entry imports the manager, protocol.ts its job spec.
    expect(graph.get(path.join(SRC, 'index.ts'))?.length).toBeGreaterThan(5);
    expect(graph.get(path.join(SRC, 'shared/protocol.ts'))).toContain(path.join(SRC, 'shared/job-spec.ts'));
    expect(circles(graph).map((group) => group.map((file) => path.relative(SRC, file)))).toEqual([]);
  });

  it("finds a circle when there is one (the check's own check)", () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a', 'd']],
    ]);
    expect(circles(graph)).toEqual([['a', 'b', 'c'], ['d']]);
  });
});
