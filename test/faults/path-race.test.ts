/**
 * Path checks must not race (issue 8, section 9): a folder swapped for a symbolic link to
 * `../outside` thousands of times while the tools run never lets read_file, grep or list_dir
 * return outside content, nor write_file or edit_file create or change a file outside. The
 * swapper is a separate process, so it really runs between a tool's check and its open.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { lstat as stat, mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/shared/errors.js';
import { editFileTool, grepTool, listDirTool, readFileTool, writeFileTool } from '../../src/shared/tools/index.js';
import { callTool, toolContext } from '../helpers/sandbox.js';

const CALLS = Number(process.env.RACE_CALLS ?? 1000);
let base: string;
let ws: string;
let outside: string;

/** Renames a real folder and a link to `outside` in and out of `dir` as fast as it can. */
const SWAPPER = `
const { renameSync, writeFileSync } = require('node:fs');
const [ws, counter] = process.argv.slice(1);
let swaps = 0;
let strays = 0;
const tryRename = (a, b) => { try { renameSync(ws + '/' + a, ws + '/' + b); return true; } catch { return false; } };
// A folder write_file created while "dir" was briefly absent is moved aside, so the swap goes on.
const swapIn = (name) => { if (tryRename(name, 'dir')) tryRename('dir', name); else tryRename('dir', 'stray-' + strays++); };
process.on('SIGTERM', () => { writeFileSync(counter, String(swaps)); process.exit(0); });
setImmediate(function loop() {
  for (let i = 0; i < 200; i++) {
    swapIn('real');
    swapIn('link');
    swaps++;
  }
  setImmediate(loop);
});
`;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'forkpool-race-')));
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await mkdir(path.join(ws, 'real'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(ws, 'real', 'file.txt'), 'inside content\n');
  await writeFile(path.join(outside, 'file.txt'), 'OUTSIDE content\n');
  await symlink(outside, path.join(ws, 'link'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

async function withSwapper<T>(work: () => Promise<T>): Promise<{ result: T; swaps: number }> {
  const counter = path.join(base, `swaps-${Math.random()}`);
  const child: ChildProcess = spawn(process.execPath, ['-e', SWAPPER, ws, counter], { stdio: 'ignore' });
  try {
    const result = await work();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    return { result, swaps: Number(await readFile(counter, 'utf8')) };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/** Runs a tool call, counting refusals (expected while the swap is on) and returning output. */
async function attempt(run: () => Promise<string>): Promise<string | ToolError> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ToolError) return error;
    throw error;
  }
}

describe('tools under a racing folder ↔ symlink swap', () => {
  const ctx = () => toolContext(ws);

  it('read_file, grep and list_dir never return outside content', async () => {
    const { result, swaps } = await withSwapper(async () => {
      const seen = { inside: 0, refused: 0, outside: [] as string[] };
      for (let i = 0; i < CALLS; i++) {
        const outputs = await Promise.all([
          attempt(() => callTool(readFileTool, { path: 'dir/file.txt' }, ctx())),
          attempt(() => callTool(grepTool, { pattern: 'content', path: 'dir' }, ctx())),
          attempt(() => callTool(listDirTool, { path: 'dir' }, ctx())),
        ]);
        for (const out of outputs) {
          if (out instanceof ToolError) seen.refused++;
          else if (out.includes('OUTSIDE')) seen.outside.push(out);
          else if (out.includes('inside content') || out.includes('file.txt')) seen.inside++;
        }
      }
      return seen;
    });
    expect(result.outside).toEqual([]);
    // The race was really on: some calls saw the folder, some were refused.
    expect(swaps).toBeGreaterThan(100);
    expect(result.inside).toBeGreaterThan(0);
    expect(result.refused).toBeGreaterThan(0);
  });

  it('write_file and edit_file never create or change a file outside', async () => {
    const { result } = await withSwapper(async () => {
      let written = 0;
      for (let i = 0; i < CALLS; i++) {
        const outputs = await Promise.all([
          attempt(() => callTool(writeFileTool, { path: `dir/new-${i}.txt`, content: 'planted' }, ctx())),
          attempt(() => callTool(editFileTool, { path: 'dir/file.txt', old_text: 'OUTSIDE', new_text: 'PWNED' }, ctx())),
        ]);
        if (typeof outputs[0] === 'string') written++;
      }
      return written;
    });
    expect(await readdir(outside)).toEqual(['file.txt']);
    expect(await readFile(path.join(outside, 'file.txt'), 'utf8')).toBe('OUTSIDE content\n');
    expect(result).toBeGreaterThan(0);
    // Every file written landed inside: in the real folder, or one made while "dir" was absent.
    let inside = 0;
    for (const name of await readdir(ws)) {
      if (name === 'link' || !(await stat(path.join(ws, name))).isDirectory()) continue;
      inside += (await readdir(path.join(ws, name))).filter((n) => n.startsWith('new-')).length;
    }
    expect(inside).toBe(result);
  });
});
