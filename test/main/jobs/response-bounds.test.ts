/**
 * One model response with thousands of tool calls, through the real pool and a real worker on
 * the sim: at most `toolLimits.maxToolCallsPerResponse` of them run (and send events to the
 * main thread), every other one is answered with a tool error the model reads in its next
 * request, and the transcript's step for that turn stays under its cap (the rest counted).
 */
import { describe, expect, it } from 'vitest';
import { JobTranscripts } from '../../../src/main/jobs/transcripts.js';
import { DeliveryLedger } from '../../../src/main/ledger/ledger.js';
import { stepHeadLine } from '../../../src/main/views/transcript-lines.js';
import { TRANSCRIPT_LIMITS } from '../../../src/shared/fixed-limits.js';
import type { LoopEvent } from '../../../src/shared/loop-events.js';
import { ended, makeConfig, makeManager, makeWorkspace, startSim, toolMessagesOf, useCleanup } from '../../helpers/index.js';

const cleanup = useCleanup();

describe('one response with thousands of tool calls', () => {
  it('runs at most maxToolCallsPerResponse of them; the rest are answered with a tool error the model sees; the main thread gets events for the run ones only', async () => {
    const calls = Array.from({ length: 5_000 }, (_, i) => ({ name: 'read_file', arguments: { path: `missing-${i}.txt` } }));
    const sim = await startSim(cleanup, { script: [{ toolCalls: calls }, { content: 'done' }] });
    const cap = 40;
    const config = makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 1 }, { tools: ['read_file'], toolLimits: { maxToolCallsPerResponse: cap } });
    const manager = makeManager(config, cleanup);
    const events: LoopEvent[] = [];
    // Event-loop ticks, counted while the job runs: the most events the main thread handled in one tick.
    let ticks = 0;
    let ticking = true;
    const tick = () => {
      ticks++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const perTick = new Map<number, number>();
    manager.on('progress', ({ event }) => {
      events.push(event);
      perTick.set(ticks, (perTick.get(ticks) ?? 0) + 1);
    });
    const job = manager.spawn({ task: 'read a lot', label: 'many' });
    const record = await ended(manager, job.id);
    ticking = false;

    expect(record.status).toBe('ok');
    expect(sim.requests).toHaveLength(2);
    const answers = toolMessagesOf(sim.requests[1]?.body as never);
    // Every call has its answer, in the model's order.
    expect(answers).toHaveLength(5_000);
    expect(answers.slice(0, cap).every((a) => /missing-\d+\.txt/.test(a) && !a.includes('maxToolCallsPerResponse'))).toBe(true);
    expect(
      answers.slice(cap).every((a) => a.startsWith('Error: not run') && a.includes('at most 40 run per response (toolLimits.maxToolCallsPerResponse)')),
    ).toBe(true);
    // The main thread's work is bounded by the cap, not by the response: one call and one result event per run call.
    expect(events.filter((e) => e.type === 'tool_call')).toHaveLength(cap);
    expect(events.filter((e) => e.type === 'tool_result')).toHaveLength(cap);
    // No burst holds the loop: at most the cap's events (and the turn's own) in any one tick.
    expect(Math.max(...perTick.values())).toBeLessThanOrEqual(2 * cap + 4);
    expect(ticks).toBeGreaterThan(1);
    const turn = manager.transcript(job.id)?.steps[0];
    expect(turn?.kind === 'model' && turn.calls).toHaveLength(cap);
  });
});

describe("a transcript's model step", () => {
  it(`keeps calls up to ${TRANSCRIPT_LIMITS.stepCallChars} characters and counts the rest (30,000 calls from a worker with no cap of its own)`, () => {
    const transcripts = new JobTranscripts(makeConfig(undefined, '/tmp'), new DeliveryLedger(), undefined);
    const usage = { promptTokens: 1, completionTokens: 1, totalTokens: 2, requests: 1 };
    transcripts.record('bg-1', { type: 'model_response', iteration: 1, toolCalls: 30_000, usage, model: 'm' });
    const args = JSON.stringify({ path: 'x'.repeat(80) });
    for (let i = 0; i < 30_000; i++) transcripts.record('bg-1', { type: 'tool_call', callId: `call_${i}`, name: 'read_file', argsPreview: '', args });
    transcripts.record('bg-1', { type: 'model_response', iteration: 2, toolCalls: 0, usage, model: 'm' });

    const [first, second] = transcripts.read('bg-1').steps;
    if (first?.kind !== 'model') throw new Error('not a model step');
    const held = first.calls.reduce((n, c) => n + c.callId.length + c.name.length + c.args.length, 0);
    expect(held).toBeLessThanOrEqual(TRANSCRIPT_LIMITS.stepCallChars);
    expect(first.calls.length).toBeGreaterThan(0);
    expect(first.calls.length + (first.callsOmitted ?? 0)).toBe(30_000);
    // Its head line (`forkpool jobs show`) says how many were not kept.
    expect(stepHeadLine(first)).toContain(`→ 30000 calls, ${first.callsOmitted} not kept: read_file`);
    // The next turn starts its own count.
    expect(second).toMatchObject({ kind: 'model', iteration: 2, calls: [] });
    expect(JSON.stringify(first).length).toBeLessThan(TRANSCRIPT_LIMITS.maxChars);
  });
});
