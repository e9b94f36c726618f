/**
 * What a job's config and spawn decide reaches the `forkpool worker` that runs it, as it reaches
 * a local thread: the wire its endpoint speaks (`api`, the config's or its agent's), its
 * scheduler (`sleep`: the run ends asleep, the main process keeps the sleep and wakes the job as
 * a new launch; `exit_on_defer`), its output schema and how that is bound, and its turn timeouts.
 * The first test is the wire format alone; the others run a real redis-server, a real worker
 * process and the simulator, on a worker whose own config speaks the default wire (chat).
 */
import { describe, expect, it } from 'vitest';
import { specForRedis, wireSpecSchema, type WireSpec } from '../../../src/main/bullmq/job-request.js';
import { WorkerPolicy } from '../../../src/main/bullmq/worker-policy.js';
import { configForAgent } from '../../../src/shared/agents.js';
import { parseConfig } from '../../../src/shared/config.js';
import type { JobSpec } from '../../../src/shared/protocol.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import { RESEARCH_TASK, ended, skipWithoutRedis, startBullmqPair, tempWorkspace, useCleanup, waitFor } from '../../helpers/index.js';

const cleanup = useCleanup();

const FINDING = {
  type: 'object',
  properties: { file: { type: 'string' }, lines: { type: 'integer', minimum: 1 }, confident: { type: 'boolean' } },
  required: ['file', 'lines', 'confident'],
  additionalProperties: false,
};

/** As a worker reads it: JSON through Redis, then the strict wire schema. */
function throughRedis(spec: JobSpec): WireSpec {
  return wireSpecSchema.parse(JSON.parse(JSON.stringify(specForRedis(spec))));
}

describe('bullmq: what a job decides, on the wire', () => {
  it("its wire, scheduler, output schema, how that is bound and its turn timeouts reach the worker's spec; its agent's too; a job without `api` speaks the worker's", () => {
    const main = parseConfig({
      baseUrl: 'http://127.0.0.1:7001/v1',
      api: 'anthropic',
      structuredOutput: 'tool',
      workspaceRoot: tempWorkspace({}, cleanup),
      agents: {
        typed: { description: 'typed', api: 'responses', outputSchema: FINDING, structuredOutput: 'response_format', turnTimeoutMs: 4_000 },
      },
    });
    const policy = new WorkerPolicy(parseConfig({ baseUrl: 'http://127.0.0.1:7001/v1', workspaceRoot: tempWorkspace({}, cleanup) }));
    const spec: JobSpec = { id: 'bg-1', label: 'x', task: 'task', role: 'user', attempt: 1, config: main };

    const fork = policy.localSpec(throughRedis({ ...spec, scheduler: 'sleep', outputSchema: FINDING, turnTimeoutMs: 3_000 }));
    expect(fork).toMatchObject({ scheduler: 'sleep', outputSchema: FINDING, turnTimeoutMs: 3_000 });
    expect(fork.config).toMatchObject({ api: 'anthropic', structuredOutput: 'tool' });

    const agent = policy.localSpec(throughRedis({ ...spec, agent: 'typed', scheduler: 'exit_on_defer' }));
    expect(agent.scheduler).toBe('exit_on_defer');
    // The worker's job thread resolves the agent again: its wire and turn timeout, its schema and binding.
    expect(configForAgent(agent.config, 'typed')).toMatchObject({ api: 'responses', turnTimeoutMs: 4_000 });
    expect(agent.config.agents.typed).toMatchObject({ outputSchema: FINDING, structuredOutput: 'response_format' });

    // A producer from before `api` was carried: the wire the worker's own config gives that endpoint.
    const wire = throughRedis(spec);
    const { api: _api, ...older } = wire.request;
    expect(policy.localSpec({ ...wire, request: older }).config.api).toBe('chat');
  });
});

const TASK = 'Watch the queue: scan it, then sleep, then scan again.';
const sleepCall = (after: string, reason = 'scan the queue again'): ScriptStep => ({
  toolCalls: [{ name: 'schedule_next_turn', arguments: { after, reason } }],
});

// Worker processes and Redis round trips: slow on a loaded machine, never hung.
describe.skipIf(skipWithoutRedis())('bullmq: what a job decides, on a worker', { timeout: 180_000 }, () => {
  it("a job speaks its config's wire (anthropic), an agent's job its agent's (responses), on a worker whose own config is on chat", async () => {
    const { manager, sim } = await startBullmqPair(cleanup, {
      producer: { config: { api: 'anthropic', agents: { gpt: { description: 'answers on the Responses wire', api: 'responses' } } } },
    });
    const fork = await ended(manager, manager.spawn({ task: RESEARCH_TASK, label: 'on anthropic' }).id);
    expect(fork.status, JSON.stringify(fork.error)).toBe('ok');
    const forkWires = sim.requests.map((r) => r.wire);
    expect(forkWires.length).toBeGreaterThan(1);
    expect(new Set(forkWires)).toEqual(new Set(['anthropic']));

    const peer = await ended(manager, manager.spawn({ task: RESEARCH_TASK, label: 'on responses', agent: 'gpt' }).id);
    expect(peer.status, JSON.stringify(peer.error)).toBe('ok');
    const peerWires = sim.requests.slice(forkWires.length).map((r) => r.wire);
    expect(peerWires.length).toBeGreaterThan(1);
    expect(new Set(peerWires)).toEqual(new Set(['responses']));
  });

  it('a typed job ends with its data, as on a local thread', async () => {
    const { manager } = await startBullmqPair(cleanup);
    const record = await ended(manager, manager.spawn({ task: RESEARCH_TASK, label: 'typed', outputSchema: FINDING }).id);
    expect(record.status, JSON.stringify(record.error)).toBe('ok');
    expect(record.data).toEqual({ file: expect.any(String) as unknown, lines: expect.any(Number) as unknown, confident: expect.any(Boolean) as unknown });
  });

  it('a sleep job ends its run asleep: its BullMQ job and both slots go back (another job runs meanwhile on the one worker thread), and at its time it is queued again and goes on from its conversation', async () => {
    const { manager, sim, worker } = await startBullmqPair(cleanup, {
      sim: { script: [sleepCall('2s'), { content: 'The other job is done.' }, { content: 'Second scan done: still nothing to do.' }] },
      producer: { background: { maxConcurrent: 1, maxAlertsPerJob: 0 } },
      worker: { concurrency: 1 },
    });
    const order: string[] = [];
    let asleep: Readonly<JobRecord> | undefined;
    manager.on('started', (record) => order.push(`started ${record.label}`));
    manager.on('done', (record) => order.push(`done ${record.label}`));
    manager.on('sleeping', (record) => {
      order.push(`sleeping ${record.label}`);
      asleep = record;
    });
    const { id } = manager.spawn({ task: TASK, label: 'supervisor', scheduler: 'sleep' });
    const other = manager.spawn({ task: 'Say you are done.', label: 'other' });
    const record = await ended(manager, id);
    expect((await ended(manager, other.id)).status).toBe('ok');

    // The other job ran while the supervisor slept: the manager's one slot and the worker's one thread were free.
    expect(order).toEqual(['started supervisor', 'sleeping supervisor', 'started other', 'done other', 'started supervisor', 'done supervisor']);
    expect(record).toMatchObject({ status: 'ok', resultText: expect.stringContaining('Second scan') as unknown, iterations: 2, attempts: 2 });
    // On the worker (one thread): the supervisor's run ended asleep, then the other job ran, then the launch after the wake.
    const runs = await waitFor(() => {
      const all = worker.runsEnded();
      return all.length === 3 ? all : undefined;
    }, 'three runs on the worker');
    expect(runs.map((run) => `${run.jobId === id ? 'supervisor' : 'other'} ${String(run.end)}`)).toEqual([
      'supervisor sleeping',
      'other done',
      'supervisor done',
    ]);
    // Woken at its time, not before, with its whole conversation and then the wake message.
    const at = asleep?.sleepWait?.at as number;
    const woken = sim.requests[2];
    expect(woken?.receivedAt).toBeGreaterThanOrEqual(at);
    const messages = (woken?.body as { messages: Array<{ role: string; content?: unknown }> }).messages;
    expect(messages.filter((m) => m.role === 'tool').map((m) => String(m.content))).toEqual([
      expect.stringMatching(/^Sleeping until .* \(scan the queue again\)/),
    ]);
    expect(messages.at(-1)).toMatchObject({
      role: 'user',
      content: expect.stringMatching(/the turn you scheduled has come \(scan the queue again\)/) as unknown,
    });
    sim.assertScriptDone();
  });
});
