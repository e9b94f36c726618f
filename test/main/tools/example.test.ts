/**
 * examples/own-tools: type-checked with tsc against the built package's types, then run as its
 * own process (importing `forkpool` by name) on its scripted simulated model: the job's call of
 * the host tool reads the SQLite table on the main thread, and the model gets the row; then it
 * calls a tool of the MCP filesystem server the example configures.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseJsonLines } from '../../helpers/cli.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const EXAMPLE = new URL('../../../examples/own-tools/', import.meta.url).pathname;

describe('examples/own-tools', () => {
  it('type-checks', async () => {
    const tsc = new URL('../../../node_modules/@typescript/native/bin/tsc', import.meta.url).pathname;
    const result = await promisify(execFile)(process.execPath, [tsc, '-p', `${EXAMPLE}tsconfig.json`], { cwd: ROOT }).catch((error) => error);
    expect(result.stdout ?? '', String(result.stderr ?? '')).toBe('');
  });

  it('runs a job whose host tool reads the orders table, and exits 0', async () => {
    const env = { ...process.env };
    delete env.MODEL_BASE_URL;
    const { stdout } = await promisify(execFile)(process.execPath, [`${EXAMPLE}app.mjs`, '--sim'], { cwd: ROOT, env, timeout: 60_000 });
    const lines = parseJsonLines(stdout);
    expect(lines[0]).toEqual({ tool_call: 'lookup_order', args: '{"id":1042}' });
    expect(lines[1]).toMatchObject({ tool_result: 'lookup_order', ok: true });
    expect(JSON.parse(String(lines[1]?.output))).toEqual({ id: 1042, customer: 'Grace', status: 'shipped', total_cents: 12_950 });
    // The MCP part: the filesystem server's tool, called from the job, answered on the main thread.
    expect(lines[2]).toEqual({ tool_call: 'mcp__files__list_allowed_directories', args: '{}' });
    expect(lines[3]).toMatchObject({ tool_result: 'mcp__files__list_allowed_directories', ok: true, output: expect.stringContaining(ROOT.replace(/\/$/, '')) });
    expect(lines[4]).toMatchObject({ status: 'ok', tools: ['read_file', 'lookup_order', 'mcp__files__list_allowed_directories'] });
  });
});
