/**
 * What a worker thread evaluates when it starts (issue 40: memory per thread in `thread`
 * isolation). Every module of the chunks the worker entry imports statically is evaluated by
 * every thread, before its first job; a chunk imported with `import()` only by a thread that
 * gets there. The `openai` client (about 11 MB of each thread's memory) belongs to the second
 * kind: only the Responses wire loads it. Reads the built bundle: build first.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';

const BUNDLE = path.join(REPO_ROOT, 'dist', 'worker', 'bundle');
/** The `openai` package's error classes: a few KB every wire raises its failures as. */
const OPENAI_AT_START = ['openai/core/error.mjs', 'openai/internal/errors.mjs'];

/** `import … from "./x.js"` and `import "./x.js"` at the top of a chunk (not `import("./x.js")`). */
const STATIC_IMPORT = /^import\s+(?:[^;]*?\s+from\s+)?"(\.\/[^"]+)"/gm;
const DYNAMIC_IMPORT = /\bimport\("(\.\/[^"]+)"\)/g;
/** rolldown's comment before each module it puts in a chunk (a package's path from its `node_modules/`). */
const MODULE_MARK = /^\/\/ (?:\S*?node_modules\/)?(\S+\.m?[jt]s)$/gm;

function chunk(name: string): string {
  return readFileSync(path.join(BUNDLE, name), 'utf8');
}

/** The chunks `entry` imports statically, itself included, transitively. */
function staticChunks(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const [, target] of chunk(name).matchAll(STATIC_IMPORT)) visit(path.posix.normalize(target as string));
  };
  visit(entry);
  return seen;
}

function modulesOf(chunks: Iterable<string>): string[] {
  return [...chunks].flatMap((name) => [...chunk(name).matchAll(MODULE_MARK)].map((m) => m[1] as string));
}

describe('a worker thread at start', () => {
  it("evaluates none of the openai client's modules, only its error classes; the Responses wire's chunk brings the client", () => {
    const atStart = staticChunks('entry.js');
    const started = modulesOf(atStart);
    // Not vacuous: the marks are there (the job's own modules, zod's).
    expect(started).toContain('dist/worker/job.js');
    expect(started.filter((m) => m.startsWith('openai/')).sort()).toEqual(OPENAI_AT_START);
    // The client is still in the bundle, in a chunk only an import() reaches.
    const lazy = new Set([...atStart].flatMap((name) => [...chunk(name).matchAll(DYNAMIC_IMPORT)].map((m) => path.posix.normalize(m[1] as string))));
    const onUse = modulesOf([...lazy].flatMap((name) => [...staticChunks(name)]).filter((name) => !atStart.has(name)));
    expect(onUse).toContain('openai/client.mjs');
    expect(onUse).toContain('dist/shared/wires/responses.js');
  });
});
