/**
 * Issue 36 §1 and §2 through the real pool and worker threads: a job whose reply was cut at the
 * token limit ends `partial` (never `ok` `final`), a cost cap binds whatever model name the server
 * answers with, a job's record names a refused port, and a retry is a line in the job's transcript.
 */
import { describe, expect, it } from 'vitest';
import { freeLoopbackPort } from '../../../src/shared/loopback.js';
import { ended, makeConfig, makeManager, makeWorkspace, startSim, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();
const POOL_TEST_TIMEOUT_MS = 60_000;

describe('jobs against what a real model server does', () => {
  it(
    'a reply cut at the token limit (and again after the continuation) ends the job `partial` with the reason, and says so',
    async () => {
      const root = await makeWorkspace(cleanups);
      const sim = await startSim(cleanups, {
        script: [
          { content: 'The first half of the answer', finishReason: 'length' },
          { content: ' and more, cut again', finishReason: 'length' },
        ],
      });
      const manager = makeManager(makeConfig(sim, root, {}, { maxTokens: 64 }), cleanups);
      const record = await ended(manager, manager.spawn({ task: 'explain everything', label: 'long' }).id);
      expect(record.status).toBe('partial');
      expect(record.stopReason).toBe('truncated');
      expect(record.resultText).toBe('The first half of the answer and more, cut again');
      expect(record.error).toMatchObject({ code: 'MODEL_OUTPUT_TRUNCATED' });
      expect(sim.requests.map((r) => r.body.max_tokens)).toEqual([64, 64]);
    },
    POOL_TEST_TIMEOUT_MS,
  );

  it(
    "a cost cap binds under the configured model's price when the server answers with a GGUF path",
    async () => {
      const root = await makeWorkspace(cleanups);
      const busy = Array.from({ length: 30 }, (_, i) => ({
        toolCalls: [{ name: 'list_dir', arguments: { path: i % 2 ? '.' : 'src' } }],
        content: `step ${i}`,
        usage: { prompt_tokens: 150, completion_tokens: 50 },
      }));
      const sim = await startSim(cleanups, { script: busy, servedModel: '/models/qwen2.5-7b-instruct-q4_k_m.gguf' });
      const config = makeConfig(
        sim,
        root,
        { budget: { maxCostUsd: 1.1 } },
        { model: 'qwen-local', models: { 'qwen-local': { inputUsdPerMTok: 1_000, outputUsdPerMTok: 1_000 } } },
      );
      const manager = makeManager(config, cleanups);
      const record = await ended(manager, manager.spawn({ task: 'survey', label: 'priced' }).id);
      expect(record.status).toBe('partial');
      expect(record.budgetExceeded).toBe('maxCostUsd');
      expect(Object.keys(record.usage)).toEqual(['qwen-local']);
      expect(record.budgetReport?.costUnpriced).toBeUndefined();
      expect(sim.requests.length).toBeLessThan(10);
    },
    POOL_TEST_TIMEOUT_MS,
  );

  it(
    "a refused port: the job's record names the cause, the URL and what to check",
    async () => {
      const root = await makeWorkspace(cleanups);
      const port = await freeLoopbackPort();
      const config = makeConfig(undefined, root, {}, { baseUrl: `http://127.0.0.1:${port}/v1` });
      const manager = makeManager(config, cleanups);
      const record = await ended(manager, manager.spawn({ task: 'anything', label: 'dead endpoint' }).id);
      expect(record.status).toBe('failed');
      expect(record.error?.message).toContain(
        `connection error: ECONNREFUSED 127.0.0.1:${port} (POST http://127.0.0.1:${port}/v1/chat/completions) — check --base-url / baseUrl`,
      );
    },
    POOL_TEST_TIMEOUT_MS,
  );

  it(
    "a retry is a line in the job's transcript: who limited it, the wait, which try",
    async () => {
      const root = await makeWorkspace(cleanups);
      const sim = await startSim(cleanups, { script: [{ content: 'done' }], faults: { 1: { kind: '429', retryAfterSeconds: 0.2 } } });
      const manager = makeManager(makeConfig(sim, root, {}, { maxRetries: 3 }), cleanups);
      const record = await ended(manager, manager.spawn({ task: 'anything', label: 'limited' }).id);
      expect(record.status).toBe('ok');
      const steps = manager.transcript(record.id)?.steps ?? [];
      const notes = steps.filter((s) => s.kind === 'note').map((s) => (s as { text: string }).text);
      expect(notes).toContainEqual(expect.stringMatching(/^rate limited by 127\.0\.0\.1:\d+, retrying in \d\.\d s \(1\/3\)$/));
    },
    POOL_TEST_TIMEOUT_MS,
  );
});
