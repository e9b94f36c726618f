/**
 * Host tools (the embedder's functions, run on the main thread) called by jobs in real worker
 * threads, in `thread` and `shared` isolation, on a scripted sim: the call crosses the thread
 * link, is validated against the real schema here, runs with `ctx`, and its answer (or error)
 * is what the job's model reads. A call's signal aborts on cancel and when its thread dies.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { runHostCall } from '../../../src/main/tools/host-calls.js';
import { tool, type ToolCallContext, type ToolDefinition } from '../../../src/shared/tool-contract.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import { ended, makeConfig, makeWorkspace, startSim, startedJob, toolMessagesOf, toolSchema, useCleanup, waitFor, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();
const THREAD_TOOLS = new URL('../../fixtures/tool-modules/thread-tools.mjs', import.meta.url).pathname;

const call = (name: string, args: Record<string, unknown>, id: string) => ({ name, arguments: JSON.stringify(args), id });

/** A host tool over a little table of orders; records every context it was called with. */
function ordersTool(seen: ToolCallContext[]): ToolDefinition<{ id: number }> {
  return tool({
    name: 'lookup_order',
    description: 'Looks an order up by its id.',
    parameters: z.object({ id: z.number().int().min(1) }),
    run: ({ id }, ctx) => {
      seen.push(ctx);
      return { id, status: id === 7 ? 'shipped' : 'unknown' };
    },
  });
}

async function setUp(
  script: ScriptStep[],
  tools: ToolDefinition[],
  background: NonNullable<ForkpoolConfigInput['background']> = {},
  extra: Partial<ForkpoolConfigInput> = {},
) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script });
  const config = makeConfig(sim, root, { maxConcurrent: 2, ...background }, { tools: ['read_file', ...tools.map((t) => t.name)], ...extra });
  const manager = watchManager(new BackgroundManager({ config, tools }));
  cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
  return { sim, manager, root };
}

describe('a host tool called from a job', () => {
  for (const isolation of ['thread', 'shared'] as const) {
    it(`runs on the main thread with its context and answers the model (${isolation} isolation)`, async () => {
      const seen: ToolCallContext[] = [];
      const { sim, manager } = await setUp(
        [{ toolCalls: [call('lookup_order', { id: 7 }, 'c1'), call('lookup_order', { id: 'seven' }, 'c2')] }, { content: 'order 7 has shipped' }],
        [ordersTool(seen)],
        { isolation },
      );
      const job = manager.spawn({ task: 'where is order 7?', label: 'orders' });
      const record = await ended(manager, job.id);
      sim.assertScriptDone();

      expect(record.status).toBe('ok');
      expect(record.tools).toEqual(['read_file', 'lookup_order']);
      // The model was offered the real JSON Schema, from the main thread's definition.
      const offered = toolSchema(sim.requests[0]!, 'lookup_order');
      expect(offered.properties.id).toMatchObject({ type: 'integer', minimum: 1 });
      const [answer, invalid] = toolMessagesOf(sim.requests[1]?.body);
      expect(JSON.parse(answer ?? '')).toEqual({ id: 7, status: 'shipped' });
      // Validated here, against the real schema: the model reads why, and run() never saw it.
      expect(invalid).toMatch(/^Error: invalid arguments for lookup_order/);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ jobId: job.id, callId: 'c1', agent: 'fork' });
      expect(seen[0]?.signal.aborted).toBe(false);
    });
  }

  it('a tool that throws: the model reads its error and the job goes on', async () => {
    const failing = tool({
      name: 'charge_card',
      description: 'Charges a card.',
      parameters: { type: 'object', properties: { cents: { type: 'integer' } }, required: ['cents'] },
      run: () => {
        throw new Error('card declined: insufficient funds');
      },
    });
    const { sim, manager } = await setUp([{ toolCalls: [call('charge_card', { cents: 500 }, 'k1')] }, { content: 'the charge failed' }], [failing]);
    const record = await ended(manager, manager.spawn({ task: 'charge it', label: 'charge' }).id);
    sim.assertScriptDone();
    expect(record.status).toBe('ok');
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Error: card declined: insufficient funds']);
  });

  it('a call that hangs: cancelling the job aborts its signal, and the job ends cancelled', async () => {
    let called!: (ctx: ToolCallContext) => void;
    const calledWith = new Promise<ToolCallContext>((resolve) => (called = resolve));
    const hanging = tool({
      name: 'slow_report',
      description: 'Builds a report (slowly).',
      parameters: z.object({}),
      run: (_args, ctx) => {
        called(ctx);
        return new Promise<string>(() => {});
      },
    });
    const { manager } = await setUp([{ toolCalls: [call('slow_report', {}, 's1')] }], [hanging]);
    const job = manager.spawn({ task: 'build the report', label: 'report' });
    const ctx = await calledWith;
    const aborted = new Promise<unknown>((resolve) => ctx.signal.addEventListener('abort', () => resolve(ctx.signal.reason), { once: true }));
    manager.cancel(job.id);
    await aborted;
    expect(ctx.signal.aborted).toBe(true);
    expect((await ended(manager, job.id)).status).toBe('cancelled');
  });

  it("a thread that dies mid-call aborts the call's signal", async () => {
    const root = await makeWorkspace(cleanups);
    const marker = path.join(root, 'host-call-started');
    let called!: (ctx: ToolCallContext) => void;
    const calledWith = new Promise<ToolCallContext>((resolve) => (called = resolve));
    const waiting = tool({
      name: 'wait_for_approval',
      description: 'Waits for a person to approve.',
      parameters: z.object({}),
      run: (_args, ctx) => {
        // The job's other call (a module tool in its thread) ends the thread once this exists.
        writeFileSync(marker, 'x');
        called(ctx);
        return new Promise<string>(() => {});
      },
    });
    const sim = await startSim(cleanups, { script: [{ toolCalls: [call('wait_for_approval', {}, 'w1'), call('exit_thread_when', { path: marker }, 'x1')] }] });
    const config = makeConfig(
      sim,
      root,
      { maxConcurrent: 1, isolation: 'thread' },
      { tools: ['wait_for_approval', 'exit_thread_when'], toolModules: [THREAD_TOOLS] },
    );
    const manager = watchManager(new BackgroundManager({ config, tools: [waiting] }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    const job = manager.spawn({ task: 'wait, then crash', label: 'crash' });
    const ctx = await calledWith;
    expect(existsSync(marker)).toBe(true);
    const record = await ended(manager, job.id);
    expect(ctx.signal.aborted).toBe(true);
    expect(record.status).toBe('failed');
  });

  it('a hung call in shared isolation stops with its job, and the thread serves the next job', async () => {
    let called!: () => void;
    const calledOnce = new Promise<void>((resolve) => (called = resolve));
    const signals: AbortSignal[] = [];
    const hanging = tool({
      name: 'hang',
      description: 'Never answers.',
      parameters: z.object({}),
      run: (_args, ctx) => {
        signals.push(ctx.signal);
        called();
        return new Promise<string>(() => {});
      },
    });
    const { sim, manager } = await setUp([{ toolCalls: [call('hang', {}, 'h1')] }, { content: 'second job answered' }], [hanging], {
      isolation: 'shared',
      maxConcurrent: 1,
    });
    const first = manager.spawn({ task: 'hang forever', label: 'first' });
    await startedJob(manager, first.id);
    await calledOnce;
    manager.cancel(first.id);
    expect((await ended(manager, first.id)).status).toBe('cancelled');
    await waitFor(() => signals[0]?.aborted === true, 'the hung call to be aborted');
    const second = await ended(manager, manager.spawn({ task: 'answer', label: 'second' }).id);
    sim.assertScriptDone();
    expect(second.status).toBe('ok');
  });

  it("a call past the tool's timeout: its signal aborts and the model reads the timeout", async () => {
    let signal: AbortSignal | undefined;
    const slow = tool({
      name: 'slow_lookup',
      description: 'Slow.',
      parameters: z.object({}),
      timeoutMs: 300,
      run: (_args, ctx) => ((signal = ctx.signal), new Promise<string>(() => {})),
    });
    const { sim, manager } = await setUp([{ toolCalls: [call('slow_lookup', {}, 't1')] }, { content: 'it timed out' }], [slow]);
    const record = await ended(manager, manager.spawn({ task: 'look slowly', label: 'slow' }).id);
    sim.assertScriptDone();
    expect(record.status).toBe('ok');
    expect(toolMessagesOf(sim.requests[1]?.body)[0]).toMatch(/^Error: tool slow_lookup timed out after 300 ms/);
    await waitFor(() => signal?.aborted === true, 'the timed-out call to be aborted');
  });

  it('an answer of megabytes is capped before it crosses, and a key in it is redacted', async () => {
    const KEY = 'sk-host-tool-secret-0123456789';
    const huge = tool({ name: 'dump_table', description: 'Dumps.', parameters: z.object({}), run: () => `${KEY}\n${'row\n'.repeat(2_000_000)}` });
    const { sim, manager } = await setUp([{ toolCalls: [call('dump_table', {}, 'd1')] }, { content: 'too big' }], [huge], {}, { apiKey: KEY });
    await ended(manager, manager.spawn({ task: 'dump it', label: 'dump' }).id);
    const [answer] = toolMessagesOf(sim.requests[1]?.body);
    expect(answer?.length).toBeLessThanOrEqual(30_000);
    expect(answer).not.toContain(KEY);
  });

  it('a gated host tool runs only when granted; the model reads the denial otherwise', async () => {
    const runs: number[] = [];
    const refund = tool({
      name: 'refund_order',
      description: 'Refunds an order.',
      parameters: z.object({ id: z.number() }),
      gated: true,
      run: ({ id }) => (runs.push(id), `refunded ${id}`),
    });
    const script = [{ toolCalls: [call('refund_order', { id: 3 }, 'r1')] }, { content: 'done' }];
    const denied = await setUp(script, [refund]);
    await ended(denied.manager, denied.manager.spawn({ task: 'refund 3', label: 'refund' }).id);
    expect(toolMessagesOf(denied.sim.requests[1]?.body)[0]).toMatch(/^Error: permission denied: "refund_order" is not granted/);
    expect(runs).toEqual([]);
    const granted = await setUp(script, [refund], {}, { grantedTools: ['refund_order'] });
    await ended(granted.manager, granted.manager.spawn({ task: 'refund 3', label: 'refund' }).id);
    expect(toolMessagesOf(granted.sim.requests[1]?.body)).toEqual(['refunded 3']);
    expect(runs).toEqual([3]);
  });
});

describe("a host tool in the parent's own loop", () => {
  it('serves the parent agent of a session, with jobId "parent"', async () => {
    const seen: ToolCallContext[] = [];
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ toolCalls: [call('lookup_order', { id: 7 }, 'p1')] }, { content: 'order 7 has shipped' }] });
    const config = makeConfig(sim, root, {}, { tools: ['read_file', 'lookup_order'] });
    const session = new AgentSession({ config, tools: [ordersTool(seen)], background: false });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const turn = await session.submit('where is order 7?');
    sim.assertScriptDone();
    expect(turn.answer).toBe('order 7 has shipped');
    expect(JSON.parse(toolMessagesOf(sim.requests[1]?.body)[0] ?? '')).toEqual({ id: 7, status: 'shipped' });
    expect(seen[0]).toMatchObject({ jobId: 'parent', callId: 'p1', agent: 'parent' });
  });
});

/** The main thread's side alone: what crosses back to the job is already bounded, whatever the job's loop does after. */
describe('runHostCall', () => {
  const ctx = { jobId: 'bg-1', callId: 'c1', agent: 'fork' };
  it('caps and redacts the answer before it crosses, and ends a call past its timeout by aborting its signal', async () => {
    const KEY = 'sk-host-tool-secret-0123456789';
    const huge = tool({ name: 'dump', description: 'Dumps.', parameters: z.object({}), run: () => `${KEY}\n${'row\n'.repeat(1_000_000)}` });
    const limits = { timeoutMs: 60_000, outputMaxChars: 1_000, secrets: [KEY] };
    const answer = await runHostCall(huge, {}, ctx, new AbortController().signal, limits);
    expect(answer.ok).toBe(true);
    expect(answer.ok && answer.output.length).toBeLessThanOrEqual(1_000);
    expect(answer.ok && answer.output).not.toContain(KEY);

    let signal: AbortSignal | undefined;
    const hang = tool({
      name: 'hang',
      description: 'Hangs.',
      parameters: z.object({}),
      timeoutMs: 50,
      run: (_a, c) => ((signal = c.signal), new Promise<string>(() => {})),
    });
    expect(await runHostCall(hang, {}, ctx, new AbortController().signal, limits)).toMatchObject({ ok: false, code: 'TOOL_TIMEOUT' });
    expect(signal?.aborted).toBe(true);
  });
});
