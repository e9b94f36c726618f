/**
 * examples/embed-fastify: type-checked with tsc against the built package's types, then started
 * as its own process (importing `forkpool` by name) and used over HTTP.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';

const cleanup = useCleanup();
const ROOT = new URL('../../', import.meta.url).pathname;
const EXAMPLE = new URL('../../examples/embed-fastify/', import.meta.url).pathname;

describe('examples/embed-fastify', () => {
  it('type-checks', async () => {
    // TypeScript 7's tsc, the build's: package.json's `typescript` is the 6.0 API typescript-eslint loads.
    const tsc = new URL('../../node_modules/@typescript/native/bin/tsc', import.meta.url).pathname;
    const result = await promisify(execFile)(process.execPath, [tsc, '-p', `${EXAMPLE}tsconfig.json`], { cwd: ROOT }).catch((error) => error);
    expect(result.stdout ?? '', String(result.stderr ?? '')).toBe('');
  });

  it('starts, runs a job through its own routes, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [`${EXAMPLE}server.mjs`, '--sim'], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', WORKSPACE: ROOT },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    cleanup.add(() => child.exitCode === null && child.kill('SIGKILL'));
    const lines = createInterface({ input: child.stdout });
    const output: any[] = [];
    const first = new Promise<any>((resolve) => lines.on('line', (line) => (output.push(JSON.parse(line)), resolve(output[0]))));
    const { listening } = await first;
    expect(((await (await fetch(`${listening}/health`)).json()) as { ok: boolean }).ok).toBe(true);
    const bad = await fetch(`${listening}/research`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(bad.status).toBe(400);
    const started = await fetch(`${listening}/research`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'Where is the retry backoff implemented?' }),
    });
    expect(started.status).toBe(202);
    const { id } = (await started.json()) as { id: string };
    const answer = (await (await fetch(`${listening}/research/${id}`)).json()) as { status: string; answer: unknown };
    expect(answer.status).toMatch(/ok|partial/);
    expect(typeof answer.answer).toBe('string');
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(0);
    expect(output.at(-1)).toMatchObject({ closed: 'SIGTERM' });
  });
});
