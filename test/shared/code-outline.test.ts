/**
 * code_outline: the symbols of a JS/TS file with exact line ranges, parse errors and bad paths
 * as tool errors, and the tool inside a real worker thread (a job the sim asks to outline).
 */
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ToolLimits } from '../../src/shared/config.js';
import { DEFAULTS } from '../../src/shared/defaults.js';
import { ToolError } from '../../src/shared/errors.js';
import { BUILTIN_TOOLS, scrubEnv } from '../../src/shared/tools/index.js';
import type { ToolContext } from '../../src/shared/tools/types.js';
import { ended, makeConfig, makeManager, startSim, tempWorkspace, useCleanup } from '../helpers/index.js';

const SAMPLE_TS = `// Fixture: a small module with every kind of symbol.
import { readFile } from 'node:fs/promises';

export interface PoolOptions {
  size: number;
}

export type JobId = string;

export enum State {
  Idle,
  Busy,
}

export class Pool {
  #queue: string[] = [];
  constructor(private readonly options: PoolOptions) {}

  async run(task: string): Promise<JobId> {
    this.#queue.push(task);
    return task;
  }

  get size(): number {
    return this.options.size;
  }

  static create(size = 2): Pool {
    return new Pool({ size });
  }

  private onDone = (id: JobId): void => {
    void id;
  };
}

export function spawn(pool: Pool, task: string) {
  return pool.run(task);
}

const helper = async () => readFile('x');

export default class Registry {}

export { helper };

namespace Internal {
  export function reset() {}
}
`;

const SAMPLE_CJS_JSX = `'use strict';
function View(props) {
  return <div className="x">{props.name}</div>;
}

module.exports.render = function render(name) {
  return View({ name });
};
exports.Widget = class Widget {
  draw() {}
};
`;

const BROKEN_TS = `export function ok() {}

export function broken(a: number {
  return a;
}
`;

function ctx(workspaceRoot: string, limits: Partial<ToolLimits> = {}): ToolContext {
  return {
    workspaceRoot,
    limits: { ...DEFAULTS.tools, ...limits },
    signal: new AbortController().signal,
    permissions: { check: async () => true },
    env: scrubEnv(process.env),
  };
}

async function outline(workspaceRoot: string, file: string, limits: Partial<ToolLimits> = {}): Promise<string> {
  const tool = BUILTIN_TOOLS.code_outline;
  return tool.run(tool.parameters.parse({ path: file }), ctx(workspaceRoot, limits));
}

async function outlineError(workspaceRoot: string, file: string, limits: Partial<ToolLimits> = {}): Promise<ToolError> {
  const error = await outline(workspaceRoot, file, limits).then(
    (out) => new Error(`expected a tool error, got:\n${out}`),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

/** "15-35    export class Pool" → [15, 35, 'export class Pool']; members keep two spaces of indent per level. */
function entries(output: string): Array<[number, number, string]> {
  const rows = output
    .split('\n')
    .slice(1)
    .map((line) => {
      const m = /^\s*(\d+)-(\d+)(\s+)(.*)$/.exec(line);
      if (!m) throw new Error(`not an outline line: ${JSON.stringify(line)}`);
      return { start: Number(m[1]), end: Number(m[2]), column: line.length - (m[4] as string).length, text: m[4] as string };
    });
  const first = Math.min(...rows.map((r) => r.column));
  return rows.map((r) => [r.start, r.end, `${' '.repeat(r.column - first)}${r.text}`]);
}

describe('code_outline', () => {
  const cleanup = useCleanup();

  it('lists classes, members, functions, types and exports with exact 1-based line ranges', async () => {
    const ws = tempWorkspace({ 'src/sample.ts': SAMPLE_TS }, cleanup);
    const out = await outline(ws, 'src/sample.ts');
    expect(out.split('\n')[0]).toBe('src/sample.ts (TypeScript): 15 symbols, 49 lines');
    expect(entries(out)).toEqual([
      [4, 6, 'export interface PoolOptions'],
      [8, 8, 'export type JobId'],
      [10, 13, 'export enum State'],
      [15, 35, 'export class Pool'],
      [17, 17, '  constructor(private readonly options: PoolOptions)'],
      [19, 22, '  method run(task: string)'],
      [24, 26, '  getter size()'],
      [28, 30, '  static method create(size = 2)'],
      [32, 34, '  method onDone(id: JobId)'],
      [37, 39, 'export function spawn(pool: Pool, task: string)'],
      [41, 41, 'function helper()'],
      [43, 43, 'export class Registry'],
      [45, 45, 'export { helper }'],
      [47, 49, 'namespace Internal'],
      [48, 48, '  export function reset()'],
    ]);
  });

  it('parses JSX in a .js file and CommonJS exports', async () => {
    const ws = tempWorkspace({ 'lib/view.js': SAMPLE_CJS_JSX }, cleanup);
    expect(entries(await outline(ws, 'lib/view.js'))).toEqual([
      [2, 4, 'function View(props)'],
      [6, 8, 'export function render(name)'],
      [9, 11, 'export class Widget'],
      [10, 10, '  method draw()'],
    ]);
  });

  it('a syntax error is a tool error naming the file and the line', async () => {
    const ws = tempWorkspace({ 'src/broken.ts': BROKEN_TS }, cleanup);
    const error = await outlineError(ws, 'src/broken.ts');
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toMatch(/^src\/broken\.ts does not parse at line 3, column \d+: /);
  });

  it('refuses paths outside the workspace: "..", absolute, and a symbolic link leading out', async () => {
    const outside = tempWorkspace({ 'secret.ts': 'export const secret = 1;\n' }, cleanup);
    const ws = tempWorkspace({ 'src/ok.ts': 'export const ok = () => 1;\n' }, cleanup);
    await symlink(path.join(outside, 'secret.ts'), path.join(ws, 'src', 'link.ts'));
    const rel = path.relative(ws, path.join(outside, 'secret.ts'));
    for (const escape of [rel, path.join(outside, 'secret.ts'), 'src/link.ts']) {
      const error = await outlineError(ws, escape);
      expect(error.code, escape).toBe('PATH_OUTSIDE_WORKSPACE');
      expect(error.message).not.toContain('secret = 1');
    }
  });

  it('refuses other file types, folders, missing files and files over outlineMaxBytes, saying why', async () => {
    const ws = tempWorkspace({ 'README.md': '# hi\n', 'src/big.ts': `export const big = ${'1 + '.repeat(400)}1;\n` }, cleanup);
    await mkdir(path.join(ws, 'dir.ts'));
    await writeFile(path.join(ws, 'bin.ts'), Buffer.from([0x65, 0, 0x66]));
    expect((await outlineError(ws, 'README.md')).message).toMatch(/must name a JavaScript or TypeScript file .*received "README\.md"/);
    expect((await outlineError(ws, 'dir.ts')).message).toMatch(/is a directory/);
    expect((await outlineError(ws, 'missing.ts')).message).toMatch(/missing\.ts/);
    expect((await outlineError(ws, 'bin.ts')).message).toMatch(/binary/);
    expect((await outlineError(ws, 'src/big.ts', { outlineMaxBytes: 1_000 })).message).toMatch(/over the 1000-byte limit .*outlineMaxBytes/);
    expect(await outline(ws, 'src/big.ts', { outlineMaxBytes: 2_000 })).toMatch(/^src\/big\.ts \(TypeScript\): 1 symbol, 1 line\n1-1 {2}export const big$/);
  });

  it('runs in a worker thread: a job asked to outline files gets outlines, and errors for a broken file and an escape', async () => {
    const ws = tempWorkspace({ 'src/sample.ts': SAMPLE_TS, 'src/broken.ts': BROKEN_TS }, cleanup);
    const sim = await startSim(cleanup);
    const manager = makeManager(makeConfig(sim, ws, { isolation: 'thread' }), cleanup);
    const results: Array<{ ok: boolean; name: string }> = [];
    manager.on('progress', ({ event }) => {
      if (event.type === 'tool_result') results.push({ ok: event.ok, name: event.name });
    });
    const { id } = manager.spawn({ task: 'Outline src/sample.ts, src/broken.ts and ../escape.ts for me.', label: 'outline' });
    const record = await ended(manager, id);
    // It answered; two of its three files could not be outlined, so it says its result is partial.
    expect(record.status).toBe('partial');
    // The three calls run in parallel: their results arrive in any order.
    expect(results.map((r) => `${r.name} ${r.ok ? 'ok' : 'failed'}`).sort()).toEqual(['code_outline failed', 'code_outline failed', 'code_outline ok']);
    // What the worker sent back to the model: the outline with its ranges, and the two errors.
    const toolMessages = sim.requests.flatMap((r) =>
      ((r.body as { messages?: Array<{ role: string; content: string }> })?.messages ?? []).filter((m) => m.role === 'tool'),
    );
    const texts = toolMessages.map((m) => m.content);
    expect(texts.some((t) => t.includes('15-35  export class Pool') && t.includes('  19-22    method run(task: string)'.trimStart()))).toBe(true);
    expect(texts.some((t) => /^Error: .*src\/broken\.ts does not parse at line 3/.test(t))).toBe(true);
    expect(texts.some((t) => /^Error: .*outside the workspace/.test(t))).toBe(true);
    expect(record.resultText).toMatch(/Outlined 1 of 3 files \(15 symbols in all\)/);
  });
});
