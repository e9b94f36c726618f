/**
 * The job runtime: the worker's task body called directly (vi.mock and coverage do not reach
 * inside workers), and the permission path through the real pool, where a job asks the main
 * thread's permission store over its port and never a person.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { PermissionStore } from '../../../src/main/limits/permissions.js';
import type { ForkpoolConfig } from '../../../src/shared/config.js';
import { runBackgroundJob, runJobTask } from '../../../src/worker/job.js';
import { workerMessageSchema, type JobSpec, type WorkerMessage } from '../../../src/shared/protocol.js';
import type { PermissionRequest } from '../../../src/shared/tools/types.js';
import type { RecordedRequest, ScriptStep, SimServer } from '../../../src/sim/index.js';
import { ended, makeConfig, makeWorkspace, RESEARCH_TASK, startSim, useCleanup, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();

function specFor(config: ForkpoolConfig, task = RESEARCH_TASK): JobSpec {
  return { id: 'bg-test', label: 'test', task, role: 'primary', config, attempt: 1 };
}

/** The tool messages the model received in request `n` (1-based). */
function toolMessages(sim: SimServer, n: number): string[] {
  const request = sim.requests.find((r: RecordedRequest) => r.n === n);
  const messages = (request?.body.messages ?? []) as Array<{ role: string; content: unknown }>;
  return messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
}

function offeredTools(sim: SimServer, n = 1): string[] {
  const tools = (sim.requests.find((r) => r.n === n)?.body.tools ?? []) as Array<{ function: { name: string } }>;
  return tools.map((t) => t.function.name);
}

const bashThenAnswer: ScriptStep[] = [
  { toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] },
  { content: 'Done with what I could do.\n<result status="partial" files_touched=""/>' },
];

describe('runBackgroundJob (called directly)', () => {
  it('offers no spawn or cancel tool; a spawn call gets an unknown-tool error and the job still ends', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [
        { toolCalls: [{ name: 'spawn_background_agent', arguments: { task: 'recurse', label: 'fork bomb' } }] },
        { content: 'I answered without help.' },
      ],
    });
    const config = makeConfig(sim, root);
    const outcome = await runBackgroundJob(specFor(config), {
      signal: new AbortController().signal,
      permissions: { check: async () => false },
    });

    expect(outcome.stopReason).toBe('final');
    expect(outcome.text).toBe('I answered without help.');
    const tools = offeredTools(sim);
    expect(tools).toContain('read_file');
    expect(tools).toContain('grep');
    expect(tools).not.toContain('spawn_background_agent');
    expect(tools).not.toContain('cancel_background_agent');
    expect(tools.some((t) => /spawn|cancel|agent/.test(t))).toBe(false);
    const [result] = toolMessages(sim, 2);
    expect(result).toMatch(/^Error: unknown tool "spawn_background_agent"/);
    sim.assertScriptDone();
  });

  it('denies an ungranted tool at once through the gate, without asking anyone', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: bashThenAnswer });
    const asked: PermissionRequest[] = [];
    const outcome = await runBackgroundJob(specFor(makeConfig(sim, root)), {
      signal: new AbortController().signal,
      permissions: {
        check: async (request) => {
          asked.push(request);
          return false;
        },
      },
    });
    expect(outcome.stopReason).toBe('final');
    expect(asked).toEqual([{ tool: 'bash', summary: 'bash: echo hi', callId: 'call_1_0', args: '{"command":"echo hi"}' }]);
    const [result] = toolMessages(sim, 2);
    expect(result).toMatch(/^Error: permission denied/);
    sim.assertScriptDone();
  });

  it('ends as aborted, not thrown, when its signal aborts mid-request', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 30_000 });
    const controller = new AbortController();
    const events: string[] = [];
    const run = runBackgroundJob(specFor(makeConfig(sim, root)), {
      signal: controller.signal,
      permissions: { check: async () => false },
      onEvent: (event) => {
        events.push(event.type);
        if (event.type === 'model_request') controller.abort(new Error('test cancel'));
      },
    });
    const outcome = await run;
    expect(outcome.stopReason).toBe('aborted');
    expect(outcome.error?.code).toBe('ABORTED');
    expect(events[0]).toBe('model_request');
  });
});

describe('runJobTask (the worker task body, on this thread)', () => {
  function channels() {
    const events = new MessageChannel();
    const received: WorkerMessage[] = [];
    events.port1.on('message', (m: unknown) => received.push(workerMessageSchema.parse(m) as WorkerMessage));
    const closed = new Promise<void>((resolve) => events.port1.once('close', () => resolve()));
    cleanups.add(() => events.port1.close());
    return { events, received, closed };
  }

  const task = (spec: JobSpec, events: MessageChannel): { spec: JobSpec; port: MessagePort } => ({ spec, port: events.port2 });

  it('posts started, progress and an explicit done, then closes its ports', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const { events, received, closed } = channels();
    const result = await runJobTask(task(specFor(makeConfig(sim, root)), events));
    await closed;
    expect(result).toEqual({ jobId: 'bg-test', stopReason: 'final' });
    expect(received[0]?.type).toBe('started');
    expect(received.at(-1)?.type).toBe('done');
    expect(received.filter((m) => m.type === 'done')).toHaveLength(1);
    expect(received.some((m) => m.type === 'progress')).toBe(true);
    const done = received.at(-1);
    expect(done?.type === 'done' && done.outcome.text).toMatch(/<result status="ok"/);
  });

  it('stops cooperatively on a cancel message', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 30_000 });
    const { events, received, closed } = channels();
    events.port1.on('message', (m: WorkerMessage) => {
      if (m.type === 'started') events.port1.postMessage({ type: 'cancel', reason: 'cancel' });
    });
    const result = await runJobTask(task(specFor(makeConfig(sim, root)), events));
    await closed;
    expect(result.stopReason).toBe('aborted');
    const done = received.at(-1);
    expect(done?.type).toBe('done');
    expect(done?.type === 'done' && done.outcome.error?.code).toBe('ABORTED');
  });

  it('answers an invalid spec with a done carrying PROTOCOL_INVALID', async () => {
    const root = await makeWorkspace(cleanups);
    const { events, received, closed } = channels();
    const bad = { ...specFor(makeConfig(undefined, root)), task: '' };
    const result = await runJobTask(task(bad, events));
    await closed;
    expect(result.stopReason).toBe('error');
    expect(received).toHaveLength(1);
    expect(received[0]?.type === 'done' && received[0].outcome.error?.code).toBe('PROTOCOL_INVALID');
  });
});

describe('permissions through the real pool (messages to the main thread)', () => {
  async function runBashJob(config: ForkpoolConfig, sim: SimServer, permissions?: PermissionStore): Promise<JobRecord> {
    const manager = watchManager(new BackgroundManager({ config, ...(permissions ? { permissions } : {}) }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    const { id } = manager.spawn({ task: 'Run echo hi and report.', label: 'bash' });
    const record = await ended(manager, id);
    sim.assertScriptDone();
    return record;
  }

  it('an ungranted tool is denied at once and the job still finishes', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: bashThenAnswer });
    const record = await runBashJob(makeConfig(sim, root), sim);
    expect(record.status).toBe('partial');
    expect(record.endedBy).toBe('completed');
    const [result] = toolMessages(sim, 2);
    expect(result).toMatch(/^Error: permission denied/);
    expect(offeredTools(sim)).not.toContain('spawn_background_agent');
  });

  it('a tool granted in the config runs in the worker', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: bashThenAnswer });
    const record = await runBashJob(makeConfig(sim, root, {}, { grantedTools: ['bash'] }), sim);
    expect(record.status).toBe('partial');
    const [result] = toolMessages(sim, 2);
    expect(result).toMatch(/^hi\n\[exit code: 0\]$/);
  });

  it('a grant made at run time in the main-thread store reaches the worker', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: bashThenAnswer });
    const store = new PermissionStore();
    store.grant('bash');
    // The cloned config grants nothing: only the live store, asked over the job's port, can allow it.
    const record = await runBashJob(makeConfig(sim, root), sim, store);
    expect(record.status).toBe('partial');
    const [result] = toolMessages(sim, 2);
    expect(result).toContain('hi');
    expect(result).not.toMatch(/permission denied/);
  });
});
