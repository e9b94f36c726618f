/**
 * A thread's model calls load no undici (issue 40: memory per thread in `thread` isolation). A
 * thread's first `fetch` loaded undici (its JavaScript, `Response`, `Headers`, an llhttp
 * WebAssembly instance): in the bench's 1,000-job I/O cell, 26.7 → 24.0 MB of RSS per thread
 * without it. Chat Completions (streamed or not) and Anthropic Messages go out with `node:http`
 * (src/shared/wires/http.ts), which an ES `import` would not do either: reading every export of
 * `node:http` runs its lazy `WebSocket` getter, which loads undici. A real worker thread runs the
 * built model call against the loopback sim, then lists what it loaded. Reads dist/: build first.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';
import { makeWorkspace, startSim, useCleanup } from '../helpers/index.js';

const cleanups = useCleanup();
const dist = (file: string) => pathToFileURL(path.join(REPO_ROOT, 'dist', file)).href;

/** A thread that makes one model call per wire and mode, then says whether undici was loaded. */
const THREAD = `
import { parentPort, workerData } from 'node:worker_threads';
import { parseConfig } from '${dist('shared/config.js')}';
import { callModel, createModelClient } from '${dist('shared/model-call.js')}';
const undici = () => process.moduleLoadList.some((name) => name.includes('undici'));
const loadedAtStart = undici();
const replies = [];
for (const [api, stream] of [['chat', true], ['chat', false], ['anthropic', true]]) {
  const config = parseConfig({ baseUrl: workerData.baseUrl, workspaceRoot: workerData.workspaceRoot, apiKey: 'sk-test', api, stream, maxRetries: 0 });
  const reply = await callModel({ client: createModelClient(config), config, params: { messages: [{ role: 'user', content: 'hi' }] }, signal: new AbortController().signal });
  replies.push(reply.content);
}
parentPort.postMessage({ loadedAtStart, replies, loaded: undici() });
`;

describe('a worker thread’s model calls', () => {
  it('answer on every wire and mode without loading undici', async () => {
    const sim = await startSim(cleanups, { script: [{ content: 'one' }, { content: 'two' }, { content: 'three' }] });
    const dir = await makeWorkspace(cleanups);
    const file = path.join(dir, 'thread.mjs');
    writeFileSync(file, THREAD);
    const worker = new Worker(file, { workerData: { baseUrl: sim.url, workspaceRoot: dir } });
    cleanups.add(() => worker.terminate());
    const said = await new Promise<{ loadedAtStart: boolean; replies: string[]; loaded: boolean }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    // Not vacuous: every call was answered by the sim.
    expect(said.replies).toEqual(['one', 'two', 'three']);
    expect(said.loadedAtStart).toBe(false);
    expect(said.loaded).toBe(false);
  });
});
