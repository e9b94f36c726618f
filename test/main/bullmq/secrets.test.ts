/**
 * Secrets and trust on the BullMQ path (issue 18): nothing secret is stored in Redis, and a
 * worker trusts a queued job with nothing but its work. Real redis-server, real `forkpool
 * worker` processes, loopback proxies that record every request (and its Authorization header)
 * in front of the sim.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { specForRedis, wireSpecSchema, type WireSpec } from '../../../src/main/bullmq/job-request.js';
import { startSimServer } from '../../../src/sim/index.js';
import { applySpawnSpec } from '../../../src/shared/spawn-spec.js';
import { WorkerPolicy } from '../../../src/main/bullmq/worker-policy.js';
import { configForAgent } from '../../../src/shared/agents.js';
import { redisClient } from '../../../src/main/bullmq/redis.js';
import type { RunResult } from '../../../src/main/bullmq/wire.js';
import { parseConfig, type ForkpoolConfigInput } from '../../../src/shared/config.js';
import type { JobSpec } from '../../../src/shared/protocol.js';
import {
  skipWithoutRedis,
  RESEARCH_TASK,
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  startRecordingProxy,
  startRedis,
  startSim,
  startWorker,
  startedJob,
  tempWorkspace,
  testRedis,
  toolMessagesOf,
  cleanupOf,
  type Cleanup,
  type RecordingProxy,
} from '../../helpers/index.js';

/** A distinct random marker per secret, so a hit names the secret that leaked. */
function marker(name: string): string {
  return `${name}-${randomUUID().replaceAll('-', '')}`;
}

function client(cleanup: Cleanup, url: string): Redis {
  const c = redisClient(url);
  cleanup.add(() => c.disconnect());
  return c;
}

/** Every key in Redis and every value of every type, as one text. */
async function everythingIn(redis: Redis): Promise<{ text: string; types: Set<string> }> {
  const parts: string[] = [];
  const types = new Set<string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      types.add(type);
      parts.push(key, await valueOf(redis, key, type));
    }
  } while (cursor !== '0');
  return { text: parts.join('\n'), types };
}

async function valueOf(redis: Redis, key: string, type: string): Promise<string> {
  switch (type) {
    case 'string':
      return (await redis.get(key)) ?? '';
    case 'hash':
      return JSON.stringify(await redis.hgetall(key));
    case 'list':
      return JSON.stringify(await redis.lrange(key, 0, -1));
    case 'set':
      return JSON.stringify(await redis.smembers(key));
    case 'zset':
      return JSON.stringify(await redis.zrange(key, 0, '-1', 'WITHSCORES'));
    case 'stream':
      return JSON.stringify(await redis.xrange(key, '-', '+'));
    case 'none':
      // Expired or removed between SCAN and TYPE.
      return '';
    default:
      throw new Error(`key ${key} has type ${type}, which this scan cannot read`);
  }
}

function authorizations(proxy: RecordingProxy, jobTag: string): string[] {
  return proxy.requests.filter((r) => r.body.includes(jobTag)).map((r) => String(r.headers.authorization));
}

/** A queue of its own on `url`, for adding jobs straight to it as anyone with Redis access can. */
async function rawQueue(cleanup: Cleanup, url: string, name: string): Promise<{ queue: Queue; events: QueueEvents }> {
  const queue = new Queue(name, { connection: client(cleanup, url) });
  const events = new QueueEvents(name, { connection: client(cleanup, url) });
  cleanup.add(() => Promise.allSettled([queue.close(), events.close()]));
  // Reading the event stream before a job is added: QueueEvents reads from its connection on, so a
  // job a worker refuses at once could end before it listens, and waitUntilFinished waited out its
  // 60 s (CI, Dec 6).
  await events.waitUntilReady();
  return { queue, events };
}

/** A job spec as a (rogue) main process builds it from its own config. */
function jobSpec(id: string, task: string, config: ForkpoolConfigInput): JobSpec {
  return { id, label: id, task, role: 'user', attempt: 1, config: parseConfig(config) };
}

describe("bullmq: a worker's policy over a queued job", () => {
  it("policy fields are the worker's, grants and tools only narrow, limits and the timeout are the tighter, keys the worker's own", (context) => {
    const cleanup = cleanupOf(context);
    const workerWorkspace = tempWorkspace({}, cleanup);
    const worker = parseConfig({
      baseUrl: 'http://127.0.0.1:7001/v1',
      apiKey: 'worker-key',
      workspaceRoot: workerWorkspace,
      sandbox: 'bwrap',
      protectedPaths: ['.git', 'secrets'],
      tools: ['read_file', 'grep', 'bash'],
      grantedTools: ['bash'],
      toolLimits: { outputMaxChars: 1_000, bashTimeoutMs: 5_000 },
      background: { timeoutMinutes: 2 },
      agents: { alpha: { description: "the worker's alpha", apiKey: 'worker-alpha-key' } },
    });
    const main: ForkpoolConfigInput = {
      baseUrl: 'http://127.0.0.1:7001/v1/',
      apiKey: 'main-key',
      workspaceRoot: tempWorkspace({}, cleanup),
      allowBroadWorkspace: true,
      sandbox: 'none',
      sandboxNetwork: true,
      allowProtectedWrites: true,
      protectedPaths: [],
      tools: ['read_file', 'write_file', 'bash'],
      grantedTools: ['write_file'],
      toolLimits: { outputMaxChars: 1_000_000, bashTimeoutMs: 60_000, grepMaxMatches: 5 },
      background: { timeoutMinutes: 60 },
      agents: { alpha: { description: 'alpha', apiKey: 'main-alpha-key', tools: ['read_file', 'write_file'] } },
    };
    const wire = specForRedis({ ...jobSpec('bg-1', 'task', main), agent: 'alpha' });
    expect(JSON.stringify(wire)).not.toMatch(
      /main-key|main-alpha-key|secret|someone|workspaceRoot|sandbox|protectedPaths|allowProtectedWrites|allowBroadWorkspace/,
    );
    const { config } = new WorkerPolicy(worker).localSpec(wire);
    expect(config).toMatchObject({
      workspaceRoot: workerWorkspace,
      allowBroadWorkspace: false,
      sandbox: 'bwrap',
      sandboxNetwork: false,
      allowProtectedWrites: false,
      protectedPaths: ['.git', 'secrets'],
    });
    expect(config.baseUrl).toBe('http://127.0.0.1:7001/v1');
    // The job's agent is alpha: the worker's key for alpha on that endpoint, not the main side's.
    expect(config.apiKey).toBe('worker-alpha-key');
    expect(config.agents.alpha?.apiKey).toBeUndefined();
    expect(config.agents.alpha?.tools).toEqual(['read_file']);
    expect(config.tools).toEqual(['read_file', 'bash']);
    expect(config.grantedTools).toEqual([]);
    expect(config.toolLimits).toMatchObject({ outputMaxChars: 1_000, bashTimeoutMs: 5_000, grepMaxMatches: 5 });
    expect(config.background.timeoutMinutes).toBe(2);
    // ... and so in the job's thread, which resolves the agent again.
    expect(configForAgent(config, 'alpha').apiKey).toBe('worker-alpha-key');
    // A fork on the same endpoint gets the worker's top-level key.
    const { agent: _alpha, ...fork } = wire;
    expect(new WorkerPolicy(worker).localSpec(fork).config.apiKey).toBe('worker-key');
    expect(() => new WorkerPolicy(worker).localSpec({ ...wire, request: { ...wire.request, baseUrl: 'http://127.0.0.1:7002/v1' } })).toThrow(
      expect.objectContaining({ code: 'ENDPOINT_NOT_ALLOWED' }),
    );
  });
});

describe("bullmq: a job on a producer's simulator (issue 36: the README's keyless example)", () => {
  it("is marked on the wire only when its endpoint is a simulator of the producer's process; marked, it runs on the worker's own simulator with no key, whatever the worker's endpoint; unmarked, or on a worker without a simulator, it is refused", async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSimServer();
    const producer = { workspaceRoot: tempWorkspace({}, cleanup) };
    const onSim = specForRedis(jobSpec('bg-1', 'task', { ...producer, baseUrl: sim.url }));
    // The same loopback URL once the simulator is closed (a local model server, say): not marked.
    await sim.close();
    const onServer = specForRedis(jobSpec('bg-2', 'task', { ...producer, baseUrl: sim.url }));
    expect(onSim.request.simulator).toBe(true);
    expect(onServer.request).not.toHaveProperty('simulator');

    const worker = parseConfig({ baseUrl: 'https://api.openai.com/v1', apiKey: 'worker-key', workspaceRoot: tempWorkspace({}, cleanup) });
    const ownSim = 'http://127.0.0.1:42002/v1';
    const { config } = new WorkerPolicy(worker, { simulatorUrl: ownSim }).localSpec(onSim);
    expect(config.baseUrl).toBe(ownSim);
    expect(config.apiKey, "the worker's key goes nowhere near a simulator job").toBeUndefined();

    const refusal = (wire: WireSpec, policy: WorkerPolicy) => {
      try {
        policy.localSpec(wire);
        return 'ran';
      } catch (error) {
        return (error as { code?: string }).code;
      }
    };
    expect(refusal(onServer, new WorkerPolicy(worker, { simulatorUrl: ownSim }))).toBe('ENDPOINT_NOT_ALLOWED');
    expect(refusal(onSim, new WorkerPolicy(worker))).toBe('ENDPOINT_NOT_ALLOWED');
  });
});

describe("bullmq: a spawn's own spec on the wire", () => {
  it("crosses Redis (prompt, tool subset, model), passes the wire schema, and its tools still only narrow the worker's (one it lacks fails the job)", (context) => {
    const cleanup = cleanupOf(context);
    const worker = parseConfig({ baseUrl: 'http://127.0.0.1:7001/v1', workspaceRoot: tempWorkspace({}, cleanup), tools: ['read_file', 'grep'] });
    const main = parseConfig({ baseUrl: 'http://127.0.0.1:7001/v1', workspaceRoot: tempWorkspace({}, cleanup), models: { 'cheap-model': {} } });
    const own = {
      systemPrompt: 'Answer as a table.',
      replaceSystemPrompt: true,
      tools: ['grep', 'bash'] as NonNullable<JobSpec['tools']>,
      model: 'cheap-model',
    };
    const wire = specForRedis({ id: 'bg-1', label: 'x', task: 'task', role: 'user', attempt: 1, config: main, ...own });
    expect(wireSpecSchema.parse(JSON.parse(JSON.stringify(wire)))).toMatchObject(own);
    // A tool the spawn names that the worker does not have (bash) fails the job, naming it (issue 34).
    expect(() => new WorkerPolicy(worker).localSpec(wire)).toThrow(/names tool "bash", which this worker's configuration does not offer/);
    const narrowed = { ...own, tools: ['grep'] as NonNullable<JobSpec['tools']> };
    const local = new WorkerPolicy(worker).localSpec(
      specForRedis({ id: 'bg-2', label: 'x', task: 'task', role: 'user', attempt: 1, config: main, ...narrowed }),
    );
    expect(local).toMatchObject(narrowed);
    // The worker applies the subset over its own tools: the job never gains one.
    expect(applySpawnSpec(local.config, local).tools).toEqual(['grep']);
    expect(applySpawnSpec(local.config, local).model).toBe('cheap-model');
  });
});

// Side by side (each its own Redis or queue, sim, worker and cleanupOf list): mostly waiting on them.
describe.skipIf(skipWithoutRedis())('bullmq: secrets and trust', { timeout: 180_000, concurrent: true }, () => {
  it('no configured secret is stored in Redis (every key, every value of every type), and the worker uses its own keys', async (context) => {
    const cleanup = cleanupOf(context);
    const secret = {
      redisPassword: marker('redis-password'),
      key: marker('top-key'),
      alphaKey: marker('alpha-key'),
      betaKey: marker('beta-key'),
      gammaKey: marker('gamma-key'),
      workerKey: marker('worker-key'),
      workerAlphaKey: marker('worker-alpha-key'),
    };
    const redis = await startRedis(cleanup, { password: secret.redisPassword });
    const sim = await startSim(cleanup, { latencyMs: 100 });
    const proxy = await startRecordingProxy(cleanup, sim.url);
    const workspace = await makeWorkspace(cleanup);
    const queue = 'fp-secrets';
    await startWorker(cleanup, redis.url, {
      queue,
      config: {
        baseUrl: proxy.url,
        apiKey: secret.workerKey,
        workspaceRoot: workspace,
        agents: { alpha: { description: "the worker's alpha", apiKey: secret.workerAlphaKey } },
      },
    });
    // Every kind of secret the config holds: the top-level key, each agent's key (one agent never
    // used), the Redis password. (A URL with user:pass@ is refused by the config itself.)
    const config = makeConfig(
      undefined,
      workspace,
      { maxConcurrent: 8 },
      {
        apiKey: secret.key,
        baseUrl: proxy.url,
        executor: 'bullmq',
        redisUrl: redis.url,
        bullmq: { queue, lockMs: 4_000, pollMs: 500 },
        agents: {
          alpha: { description: 'alpha', apiKey: secret.alphaKey, baseUrl: proxy.url },
          beta: { description: 'beta', apiKey: secret.betaKey },
          gamma: { description: 'gamma', apiKey: secret.gammaKey, baseUrl: 'http://127.0.0.1:9/v1' },
        },
      },
    );
    const manager = makeManager(config, cleanup);
    const jobs = [undefined, 'alpha', 'beta'].map(
      (agent) => manager.spawn({ task: `${RESEARCH_TASK} (job: ${agent ?? 'fork'})`, label: agent ?? 'fork', role: 'user', ...(agent ? { agent } : {}) }).id,
    );
    const store = client(cleanup, redis.url);
    // Looked at twice: while the jobs run (their data waits in Redis) and after they ended (results, events).
    await Promise.all(jobs.map((id) => startedJob(manager, id)));
    const running = await everythingIn(store);
    const records = await Promise.all(jobs.map((id) => ended(manager, id)));
    const after = await everythingIn(store);

    const stored = `${running.text}\n${after.text}`;
    // The scan saw the jobs themselves (so it looked where they are), in hashes and streams.
    expect(stored).toContain('(job: alpha)');
    expect(running.types).toContain('hash');
    expect(after.types).toContain('stream');
    for (const [name, value] of Object.entries(secret)) expect(stored.includes(value), `${name} is stored in Redis`).toBe(false);
    for (const record of records) expect(record).toMatchObject({ status: 'ok', endedBy: 'completed' });

    // The worker filled the keys in from its own config: its alpha key for alpha, its own for the rest.
    expect(new Set(authorizations(proxy, '(job: alpha)'))).toEqual(new Set([`Bearer ${secret.workerAlphaKey}`]));
    expect(new Set([...authorizations(proxy, '(job: fork)'), ...authorizations(proxy, '(job: beta)')])).toEqual(new Set([`Bearer ${secret.workerKey}`]));
    const sent = JSON.stringify(proxy.requests);
    for (const name of ['key', 'alphaKey', 'betaKey'] as const) expect(sent.includes(secret[name]), `${name} reached the model endpoint`).toBe(false);
  });

  it("a forged job naming its own endpoint fails alone with ENDPOINT_NOT_ALLOWED; the worker's key is never sent there", async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await testRedis(cleanup);
    const workerKey = marker('worker-key');
    // The worker's own endpoint (scripted: one turn of tools, then an answer) and a stranger's.
    const own = await startSim(cleanup, { script: [{ toolCalls: [{ name: 'list_dir', arguments: {} }] }, { content: 'done <result status="ok"/>' }] });
    const ownProxy = await startRecordingProxy(cleanup, own.url);
    const stranger = await startRecordingProxy(cleanup, (await startSim(cleanup)).url);
    const workspace = await makeWorkspace(cleanup);
    const worker = await startWorker(cleanup, redis.url, {
      queue: redis.queue,
      concurrency: 1,
      config: { baseUrl: ownProxy.url, apiKey: workerKey, workspaceRoot: workspace },
    });
    const { queue, events } = await rawQueue(cleanup, redis.url, redis.queue);

    // The stranger here is a simulator of this process, so the job would say so (and run on the
    // worker's own simulator): a forger names an endpoint without that mark.
    const { simulator: _mark, ...request } = specForRedis(
      jobSpec('forged-endpoint', RESEARCH_TASK, { baseUrl: stranger.url, workspaceRoot: workspace }),
    ).request;
    const forged = { ...specForRedis(jobSpec('forged-endpoint', RESEARCH_TASK, { baseUrl: stranger.url, workspaceRoot: workspace })), request };
    const refused = (await (await queue.add('job', { spec: forged }, { jobId: 'forged-endpoint' })).waitUntilFinished(events, 60_000)) as RunResult;
    // The stranger heard nothing: no request, so no Authorization header with the worker's key.
    expect(stranger.requests.map((r) => r.headers.authorization)).toEqual([]);
    expect(refused.end).toMatchObject({ kind: 'done', outcome: { stopReason: 'error', error: { code: 'ENDPOINT_NOT_ALLOWED' } } });
    const message = refused.end.kind === 'done' ? String(refused.end.outcome.error?.message) : '';
    expect(message).toContain(stranger.url);
    expect(message).toContain(ownProxy.url);
    expect(message).not.toContain(workerKey);

    // The same worker runs the next job: the refusal took nothing else down.
    const fine = specForRedis(jobSpec('forged-fine', 'List the workspace.', { baseUrl: ownProxy.url, workspaceRoot: workspace }));
    const ran = (await (await queue.add('job', { spec: fine }, { jobId: 'forged-fine' })).waitUntilFinished(events, 60_000)) as RunResult;
    expect(ran.end).toMatchObject({ kind: 'done', outcome: { stopReason: 'final' } });
    expect(ownProxy.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${workerKey}`, `Bearer ${workerKey}`]);
    expect(stranger.requests).toEqual([]);
    expect(worker.runsEnded().map((r) => [r.bullId, r.stopReason])).toEqual([
      ['forged-endpoint', 'error'],
      ['forged-fine', 'final'],
    ]);
  });

  it("a forged job cannot widen a worker's power: a job carrying sandbox, workspace or grant settings is refused unrun; grants and tools only narrow", async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await testRedis(cleanup);
    const workerKey = marker('worker-key');
    const bash = { name: 'bash', arguments: { command: 'echo pwned > pwned.txt' } };
    const write = { name: 'write_file', arguments: { path: 'pwned-write.txt', content: 'pwned' } };
    const sim = await startSim(cleanup, {
      script: [{ toolCalls: [bash, write, { name: 'list_dir', arguments: {} }] }, { content: 'done <result status="ok"/>' }],
    });
    const proxy = await startRecordingProxy(cleanup, sim.url);
    const stranger = await startRecordingProxy(cleanup, (await startSim(cleanup)).url);
    const workspace = await makeWorkspace(cleanup);
    // The workspace a rogue main process names for its job: never the one the job gets.
    const elsewhere = mkdtempSync(path.join(os.tmpdir(), 'forkpool-elsewhere-'));
    cleanup.add(() => rmSync(elsewhere, { recursive: true, force: true }));
    await startWorker(cleanup, redis.url, {
      queue: redis.queue,
      concurrency: 1,
      config: { baseUrl: proxy.url, apiKey: workerKey, workspaceRoot: workspace, tools: ['list_dir', 'read_file', 'grep', 'bash'] },
    });
    const { queue, events } = await rawQueue(cleanup, redis.url, redis.queue);
    const wide: ForkpoolConfigInput = {
      baseUrl: proxy.url,
      workspaceRoot: elsewhere,
      grantedTools: ['bash', 'write_file'],
      sandbox: 'none',
      sandboxNetwork: true,
      allowProtectedWrites: true,
      protectedPaths: [],
    };

    // The whole config in the job (the old wire format) or power-widening fields in its request: refused, unrun.
    const { request, ...job } = specForRedis(jobSpec('forged-wide', RESEARCH_TASK, wide));
    const malformed = [
      { id: 'forged-old-format', spec: { ...job, config: parseConfig({ ...wide, baseUrl: stranger.url }) } },
      {
        id: 'forged-policy',
        spec: { ...job, request: { ...request, baseUrl: stranger.url, workspaceRoot: elsewhere, sandbox: 'none', allowBroadWorkspace: true } },
      },
    ];
    for (const { id, spec } of malformed) {
      const added = await queue.add('job', { spec }, { jobId: id, attempts: 3 });
      await expect(added.waitUntilFinished(events, 60_000)).rejects.toThrow(/carries no valid forkpool job spec/);
      expect((await queue.getJob(id))?.attemptsMade).toBe(1);
    }
    expect(stranger.requests).toEqual([]);

    // A well-formed job asking for grants the worker does not give, in a workspace it does not name.
    const asked = (await (await queue.add('job', { spec: { ...job, request } }, { jobId: 'forged-grants' })).waitUntilFinished(events, 60_000)) as RunResult;
    expect(asked.end).toMatchObject({ kind: 'done', outcome: { stopReason: 'final' } });
    expect(existsSync(path.join(workspace, 'pwned.txt')) || existsSync(path.join(elsewhere, 'pwned.txt')), 'bash ran: the job gained a grant').toBe(false);
    expect(
      existsSync(path.join(workspace, 'pwned-write.txt')) || existsSync(path.join(elsewhere, 'pwned-write.txt')),
      'write_file ran: the job gained a tool',
    ).toBe(false);
    expect(proxy.requests).toHaveLength(2);
    const [first, second] = proxy.requests.map(
      (r) => JSON.parse(r.body) as { tools?: Array<{ function: { name: string } }>; messages?: Array<{ role: string; content?: unknown }> },
    );
    // Offered: the tools both list (write_file is not the worker's); bash offered but not granted.
    const offered = first?.tools?.map((t) => t.function.name) ?? [];
    expect(offered).toEqual(expect.arrayContaining(['bash', 'list_dir']));
    expect(offered).not.toContain('write_file');
    const results = toolMessagesOf(second);
    expect(results[0]).toMatch(/PERMISSION_DENIED|not granted/);
    expect(results[1]).toMatch(/TOOL_UNKNOWN|unknown tool|not available/i);
    // list_dir ran in the worker's workspace, not the one the job named.
    expect(results[2]).toContain('src');
  });
});
