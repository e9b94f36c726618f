/**
 * A client generated from the live `/openapi.json` type-checks: openapi-typescript makes the
 * types from the running server's document, and a small openapi-fetch client doing the README's
 * basic flow (start a job, read it, list jobs with their totals, cancel, long-poll its result)
 * passes `tsc --strict --noEmit` (run as a child process, in a temp dir beside nothing else).
 * The client is then run against the same server, so the flow it types is also the one it gets.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { TOKEN, startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();

/** The README's flow, as a user of the generated types writes it. */
const CLIENT = `import createClient from 'openapi-fetch';
import type { components, paths } from './api.js';

export type JobDetail = components['schemas']['JobDetail'];

export async function basicFlow(baseUrl: string, token: string): Promise<{ ended: JobDetail; queued: number; lastEventId: number }> {
  const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } });
  const started = await client.POST('/v1/jobs', { body: { task: 'Where is the retry backoff?', label: 'backoff' } });
  if (started.error) throw new Error(\`\${started.error.error.code}: \${started.error.error.message}\`);
  const id: string | undefined = started.data.jobs[0]?.id;
  if (id === undefined) throw new Error(started.data.refused.map((r) => r.code).join(', '));

  const job = await client.GET('/v1/jobs/{id}', { params: { path: { id } } });
  if (job.error) throw new Error(job.error.error.code);
  const state: 'queued' | 'running' | 'ended' = job.data.state;
  const task: string = job.data.task;

  const list = await client.GET('/v1/jobs', { params: { query: { state: 'queued', limit: 10 } } });
  if (list.error) throw new Error(list.error.error.issues?.map((i) => i.field).join(', ') ?? list.error.error.message);
  const previews: string[] = list.data.jobs.map((j) => \`\${j.label}: \${j.taskPreview} (\${j.tokens} tokens, depth \${j.depth})\`);

  const cancelled = await client.DELETE('/v1/jobs/{id}', { params: { path: { id } } });
  if (cancelled.error) throw new Error(cancelled.error.error.code);

  const result = await client.GET('/v1/jobs/{id}/result', { params: { path: { id }, query: { wait: 30 } } });
  if (result.error) throw new Error(result.error.error.code);
  const answer: string | null = result.data.resultText;
  void [state, task, previews, answer];
  return { ended: result.data, queued: list.data.totals.jobs.queued, lastEventId: list.data.lastEventId };
}
`;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    target: 'ES2023',
    lib: ['ES2023', 'DOM'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    types: [],
  },
  files: ['client.ts'],
};

/** `tsc --strict --noEmit -p dir` as a child process (the project's own tsc, as `npm run typecheck`): its exit code and output. */
function typecheck(dir: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [realpathSync(path.join(REPO_ROOT, 'node_modules/.bin/tsc')), '--strict', '--noEmit', '-p', dir], { cwd: dir });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out: out.trim() }));
  });
}

/** A temp dir with the generated types, the client and a tsconfig; node_modules is the project's. */
function clientDir(types: string, client: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'forkpool-openapi-client-'));
  cleanup.add(() => rmSync(dir, { recursive: true, force: true }));
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  writeFileSync(path.join(dir, 'api.d.ts'), types);
  writeFileSync(path.join(dir, 'client.ts'), client);
  return dir;
}

describe('a client generated from /openapi.json', () => {
  it('type-checks the README flow under tsc --strict, and runs it against the server', async () => {
    const { api, url } = await startTestServer(cleanup, { background: { maxConcurrent: 1 } }, { latencyMs: 200 });
    const doc = (await (await api('/openapi.json')).json()) as Record<string, unknown>;
    const types = astToString(await openapiTS(doc as never, { silent: true }));
    const dir = clientDir(types, CLIENT);
    const checked = await typecheck(dir);
    expect(checked, 'tsc --strict --noEmit on the generated client').toEqual({ code: 0, out: '' });

    // The same flow, run: the types it was checked against are the answers it gets.
    const transpiled = ts.transpileModule(CLIENT, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023 } }).outputText;
    writeFileSync(path.join(dir, 'client.mjs'), transpiled);
    const { basicFlow } = (await import(path.join(dir, 'client.mjs'))) as {
      basicFlow: (baseUrl: string, token: string) => Promise<{ ended: { state: string; status: string }; queued: number; lastEventId: number }>;
    };
    const outcome = await basicFlow(url, TOKEN);
    expect(outcome.ended.state).toBe('ended');
    expect(typeof outcome.lastEventId).toBe('number');
  }, 120_000);
});
