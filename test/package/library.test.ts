/**
 * The library as an embedder meets it: configuration from code only (no stray file or
 * environment), a missing model is a clear error, the executor by name, brief errors in
 * records, and a cap on one model response.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackgroundManager, ConfigError, loadConfig } from '../../src/index.js';
import { callModel, createModelClient } from '../../src/shared/model-call.js';
import { withoutAbsolutePaths } from '../../src/shared/error-detail.js';
import { useCleanup } from '../helpers/cleanup.js';
import { configError, tempWorkspace, testConfig } from '../helpers/config.js';
import { startTestSim } from '../helpers/sim.js';

const cleanup = useCleanup();

function dirWithConfigFile(content: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'forkpool-lib-'));
  writeFileSync(path.join(dir, 'forkpool.config.json'), JSON.stringify(content));
  return dir;
}

describe('loadConfig from code', () => {
  it('reads no file and no environment unless asked', () => {
    const dir = dirWithConfigFile({ model: 'from-file' });
    const env = { OPENAI_MODEL: 'from-env', OPENAI_API_KEY: 'sk-env-key-1234' };
    const saved = process.env.OPENAI_MODEL;
    process.env.OPENAI_MODEL = 'from-process-env';
    try {
      const plain = loadConfig({ cwd: dir });
      expect(plain.model).toBe('forkpool-sim');
      expect(plain.apiKey).toBeUndefined();
      expect(loadConfig({ cwd: dir, file: true }).model).toBe('from-file');
      expect(loadConfig({ cwd: dir, file: true, fromEnv: env }).model).toBe('from-env');
      expect(loadConfig({ cwd: dir, fromEnv: true }).model).toBe('from-process-env');
      // Code beats file and environment; flags beat code.
      expect(loadConfig({ cwd: dir, file: true, fromEnv: env, config: { model: 'from-code' } }).model).toBe('from-code');
      expect(loadConfig({ cwd: dir, config: { model: 'from-code' }, flags: { model: 'from-flag' } }).model).toBe('from-flag');
    } finally {
      if (saved === undefined) delete process.env.OPENAI_MODEL;
      else process.env.OPENAI_MODEL = saved;
    }
  });

  it('takes every field a file accepts, nested groups merged over the file', () => {
    const dir = dirWithConfigFile({ background: { maxConcurrent: 7, heapMb: 300 } });
    const config = loadConfig({
      cwd: dir,
      file: true,
      config: {
        executor: 'inline',
        maxResponseChars: 5_000,
        background: { heapMb: 128, cancelGraceMs: 50, closeTimeoutMs: 900, queueLimit: 4 },
        toolLimits: { bashTimeoutMs: 1_000 },
      },
    });
    expect(config.executor).toBe('inline');
    expect(config.maxResponseChars).toBe(5_000);
    expect(config.background).toMatchObject({ maxConcurrent: 7, heapMb: 128, cancelGraceMs: 50, closeTimeoutMs: 900, queueLimit: 4 });
    expect(config.toolLimits.bashTimeoutMs).toBe(1_000);
    expect(config.workspaceRoot).toBe(dir);
  });

  it('validates the code config, naming the field and where it came from', () => {
    const error = configError(() => loadConfig({ config: { background: { heapMb: 4 }, executor: 'fork' } as never }));
    const heap = error.issues.find((i) => i.field === 'background.heapMb');
    expect(heap).toMatchObject({ received: '4', source: 'loadConfig({ config })' });
    expect(error.issues.find((i) => i.field === 'executor')?.expected).toContain('"worker-per-job"');
    expect(configError(() => loadConfig({ config: { nope: 1 } as never })).issues[0]?.field).toBe('nope');
  });
});

describe('a model endpoint is required', () => {
  it('refuses a manager with neither baseUrl nor apiKey, naming both fields', () => {
    const config = testConfig();
    expect(config.baseUrl).toBeUndefined();
    let error: unknown;
    try {
      new BackgroundManager({ config });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('CONFIG_INVALID');
    expect((error as ConfigError).issues[0]?.field).toBe('baseUrl');
    expect((error as ConfigError).message).toContain('apiKey');
    expect(() => createModelClient(config)).toThrow(ConfigError);
  });

  it('never takes the endpoint from the process environment', () => {
    const saved = process.env.OPENAI_BASE_URL;
    process.env.OPENAI_BASE_URL = 'http://127.0.0.1:9/stray';
    try {
      expect(createModelClient(testConfig({ apiKey: 'sk-test-1234' })).baseURL).toBe('https://api.openai.com/v1');
      expect(createModelClient(testConfig({ baseUrl: 'http://127.0.0.1:8/v1' })).baseURL).toBe('http://127.0.0.1:8/v1');
    } finally {
      if (saved === undefined) delete process.env.OPENAI_BASE_URL;
      else process.env.OPENAI_BASE_URL = saved;
    }
  });
});

describe('executor by name', () => {
  it('builds the executor the config names', async () => {
    const manager = new BackgroundManager({ config: testConfig({ baseUrl: 'http://127.0.0.1:9/v1', executor: 'inline' }) });
    expect(manager.executor.kind).toBe('inline');
    await manager.close();
  });
});

describe('record.error for callers', () => {
  async function failedRecord(errorDetail: 'brief' | 'debug') {
    const { config } = await startTestSim(cleanup, { faults: { 1: { kind: '500' } } }, { maxRetries: 0, executor: 'inline', errorDetail });
    const manager = new BackgroundManager({ config });
    cleanup.add(() => manager.destroy());
    const { id } = manager.spawn({ task: 'look at src', label: 'x' });
    return manager.result(id);
  }

  it('keeps code, message and a short cause chain, without stacks, at the default level', async () => {
    const record = await failedRecord('brief');
    expect(record.status).toBe('failed');
    expect(record.error?.code).toBe('MODEL_REQUEST_FAILED');
    const chain: unknown[] = [];
    for (let e = record.error; e; e = e.cause) chain.push(e);
    expect(chain.length).toBeGreaterThanOrEqual(1);
    expect(chain.length).toBeLessThanOrEqual(3);
    expect(JSON.stringify(record.error)).not.toContain('"stack"');
    expect(JSON.stringify(record.error)).not.toMatch(/\/(?:work|home|tmp|usr)\//);
  });

  it('keeps stacks at debug', async () => {
    const record = await failedRecord('debug');
    expect(JSON.stringify(record.error)).toContain('"stack"');
  });

  it('turns workspace paths relative and hides other absolute paths', () => {
    const root = tempWorkspace(undefined, cleanup);
    expect(withoutAbsolutePaths(`cannot read ${root}/src/a.ts or /etc/passwd.d/x at ${root}`, root)).toBe('cannot read ./src/a.ts or <path> at .');
    expect(withoutAbsolutePaths('unknown route POST /v1/no-such-prefix/chat/completions', root)).toBe('unknown route POST /v1/no-such-prefix/chat/completions');
    expect(withoutAbsolutePaths('at file:///home/me/app/node_modules/x.js:1:2', root)).toBe('at <path>');
  });
});

describe('a cap on one model response', () => {
  for (const stream of [true, false]) {
    it(`fails with MODEL_RESPONSE_TOO_LARGE and does not retry (stream: ${stream})`, async () => {
      const { sim, client, config } = await startTestSim(
        cleanup,
        { script: [{ content: 'word '.repeat(2_000) }, { content: 'again' }] },
        { maxRetries: 2, stream, maxResponseChars: 1_000 },
      );
      const call = callModel({ client, config, params: { messages: [{ role: 'user', content: 'hi' }] }, signal: new AbortController().signal });
      await expect(call).rejects.toMatchObject({ code: 'MODEL_RESPONSE_TOO_LARGE' });
      expect(sim.requestCount).toBe(1);
    });
  }
});
