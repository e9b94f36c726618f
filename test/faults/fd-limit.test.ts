/**
 * Out of file descriptors (EMFILE), as under a fan-out of thousands of jobs: the search tools
 * wait for a descriptor and carry on, or fail saying why; they never skip what they could not
 * open and answer "no matches" (which they once did: a wrong answer the model believes).
 *
 * A child process with a low open-file limit (`ulimit -n`) holds every descriptor it can get,
 * then gives back a few while a search runs: the real tools from dist/, real EMFILEs.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runToolLoop } from '../../src/shared/tool-loop.js';
import { builtinTools } from '../../src/shared/tools/index.js';
import { cleanupOf, type Cleanup } from '../helpers/cleanup.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';
import { toolContextFor } from '../helpers/gates.js';
import { toolResults } from '../helpers/history.js';
import { startTestSim } from '../helpers/sim.js';

const run = promisify(execFile);

/**
 * Runs `tool` with `args` in a process limited to 200 descriptors, all of them taken before the
 * call; `releaseAfterMs` gives 20 back that long after the call began (never, if undefined).
 */
const SCRIPT = `
import { openSync, closeSync } from 'node:fs';
const [toolsDir, ws, toolName, argsJson, releaseAfter] = process.argv.slice(2);
const { builtinTools } = await import(toolsDir + '/index.js');
const { parseConfig } = await import(toolsDir + '/../config.js');
const config = parseConfig({ workspaceRoot: ws });
const tool = builtinTools(config.tools).find((t) => t.name === toolName);
const ctx = { workspaceRoot: ws, limits: config.toolLimits, signal: new AbortController().signal, permissions: { check: async () => 'allow' }, env: {}, policy: {} };
await tool.run(JSON.parse(argsJson), ctx); // loads what the tool loads lazily, before the limit bites
const held = [];
try { for (;;) held.push(openSync(ws + '/held.txt', 'r')); } catch (error) { if (error.code !== 'EMFILE') throw error; }
if (releaseAfter !== 'never') setTimeout(() => held.splice(0, 20).forEach((fd) => closeSync(fd)), Number(releaseAfter));
try {
  console.log(JSON.stringify({ held: held.length, output: await tool.run(JSON.parse(argsJson), ctx) }));
} catch (error) {
  console.log(JSON.stringify({ held: held.length, error: { code: error.code, message: error.message } }));
}
`;

async function searchAtLimit(
  cleanup: Cleanup,
  tool: string,
  args: object,
  releaseAfter: number | 'never',
): Promise<{ held: number; output?: string; error?: { code: string; message: string } }> {
  const ws = await makeWorkspace(cleanup);
  await mkdir(path.join(ws, 'deep', 'er'), { recursive: true });
  for (let i = 0; i < 5; i++) await writeFile(path.join(ws, 'deep', 'er', `f${i}.txt`), `the needle ${i}\n`);
  await writeFile(path.join(ws, 'held.txt'), 'x\n');
  const script = path.join(ws, 'at-limit.mjs');
  await writeFile(script, SCRIPT);
  const toolsDir = path.join(REPO_ROOT, 'dist', 'shared', 'tools');
  const command = `ulimit -n 200 && exec "$0" "$@"`;
  const { stdout } = await run('bash', ['-c', command, process.execPath, script, toolsDir, ws, tool, JSON.stringify(args), String(releaseAfter)], {
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1) as string);
}

// The EMFILE tests (each in a child process of its own) and the slot-wait test run side by side;
// the 256-slot test runs alone after them (both fill this thread's search slots).
describe.concurrent('search tools at the open-file limit (EMFILE)', () => {
  it('grep waits for descriptors to free up and finds every match', async (context) => {
    const cleanup = cleanupOf(context);
    const result = await searchAtLimit(cleanup, 'grep', { pattern: 'needle' }, 50);
    expect(result.held).toBeGreaterThan(150);
    expect(result.error).toBeUndefined();
    for (let i = 0; i < 5; i++) expect(result.output).toContain(`deep/er/f${i}.txt:1: the needle ${i}`);
  });

  it('find_files waits for descriptors to free up and lists every file', async (context) => {
    const cleanup = cleanupOf(context);
    const result = await searchAtLimit(cleanup, 'find_files', { pattern: '**/f*.txt' }, 50);
    expect(result.error).toBeUndefined();
    for (let i = 0; i < 5; i++) expect(result.output).toContain(`deep/er/f${i}.txt`);
  });

  it('when none free up, grep fails naming the limit instead of answering "no matches"', async (context) => {
    const cleanup = cleanupOf(context);
    const result = await searchAtLimit(cleanup, 'grep', { pattern: 'needle' }, 'never');
    expect(result.output).toBeUndefined();
    expect(result.error?.code).toBe('TOOL_FAILED');
    expect(result.error?.message).toMatch(/too many files open in this process \(EMFILE\)/);
  });
});

describe.concurrent('searches per thread: the tool timeout', () => {
  it('a search waiting for its turn is not timed out by the tool timeout, which still ends one that hangs once running', async (context) => {
    const cleanup = cleanupOf(context);
    const { withSearchSlot } = await import('../../src/shared/tools/fd-limit.js');
    const { withTimeout } = await import('../../src/shared/abort.js');
    const toolTimeoutMs = 1_000;
    // Every slot of this thread taken, as by 256 other jobs' searches under a 10,000-job load.
    const gates: Array<() => void> = [];
    const held = Array.from({ length: 256 }, () =>
      withSearchSlot({ signal: new AbortController().signal }, () => new Promise<void>((open) => gates.push(open))),
    );
    const t = await startTestSim(
      cleanup,
      {
        script: [
          {
            toolCalls: [
              { name: 'grep', arguments: { pattern: 'redactKeys' }, id: 'call_grep' },
              { name: 'find_files', arguments: { pattern: '**/*.ts' }, id: 'call_find' },
            ],
          },
          { content: 'done' },
        ],
      },
      { toolLimits: { toolTimeoutMs } },
    );
    const loop = runToolLoop({
      client: t.client,
      config: t.config,
      messages: [{ role: 'user', content: 'search' }],
      tools: builtinTools(t.config.tools),
      toolContext: toolContextFor(t.config),
    });
    // Queued for 2.5 tool timeouts: the wait must not count (it once did: "tool grep timed out after 1000 ms").
    await new Promise((resolve) => setTimeout(resolve, 2.5 * toolTimeoutMs));
    gates.splice(0).forEach((open) => open());
    await Promise.all(held);
    const result = await loop;
    const outputs = toolResults(result.messages);
    expect(outputs.get('call_grep')).toContain('src/keys.ts:1: export const redactKeys');
    expect(outputs.get('call_find')).toContain('src/loop.ts');

    // Once past the wait, the timeout runs on: work that hangs after an untimed wait still times out.
    const hangs = withTimeout(
      async (signal, untimed) => {
        await untimed(() => new Promise((resolve) => setTimeout(resolve, 2 * toolTimeoutMs)));
        return new Promise<never>(() => {});
      },
      toolTimeoutMs,
      new AbortController().signal,
      () => new Error('timed out'),
    );
    await expect(hangs).rejects.toThrow('timed out');
  });
});

describe('searches per thread', () => {
  it('run at most 256 at once; the rest wait holding nothing, then all finish; an abort while waiting ends the wait', async () => {
    const { withSearchSlot } = await import('../../src/shared/tools/fd-limit.js');
    let running = 0;
    let most = 0;
    const gates: Array<() => void> = [];
    const search = () =>
      new Promise<string>((resolve) => {
        running++;
        most = Math.max(most, running);
        gates.push(() => {
          running--;
          resolve('done');
        });
      });
    const signal = new AbortController().signal;
    const all = Array.from({ length: 300 }, () => withSearchSlot({ signal }, search));
    const aborted = new AbortController();
    const waiting = withSearchSlot({ signal: aborted.signal }, search);
    await new Promise((resolve) => setImmediate(resolve));
    expect(running).toBe(256);
    aborted.abort(new Error('cancelled'));
    await expect(waiting).rejects.toMatchObject({ code: 'ABORTED' });
    while (gates.length > 0) {
      gates.splice(0).forEach((open) => open());
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await Promise.all(all)).toHaveLength(300);
    expect(most).toBe(256);
  });
});
