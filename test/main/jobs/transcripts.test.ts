/**
 * A job's transcript (src/main/jobs/transcripts.ts) through the real pool on the simulator: its
 * steps in order with the tool calls' arguments and results, capped; written to the durable
 * ledger and read back after a restart; dropped with its result by retention; and a secret
 * planted in a tool's output never in it.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { JobTranscripts } from '../../../src/main/jobs/transcripts.js';
import { DeliveryLedger } from '../../../src/main/ledger/ledger.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import { TRANSCRIPT_LIMITS } from '../../../src/shared/fixed-limits.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import type { SimServer } from '../../../src/sim/index.js';
import { drainedIds, ended, ledgerFile, makeConfig, makeWorkspace, RawDatabase, startSim, useCleanup, watchManager } from '../../helpers/index.js';

const SECRET = 'sk-transcript-secret-0123456789abcdef';

/** The scripted job: says something and greps, then reads the file holding the key, then answers. */
const SCRIPT = [
  { content: 'Looking for the backoff.', toolCalls: [{ name: 'grep', arguments: { pattern: 'retry' } }] },
  { toolCalls: [{ name: 'read_file', arguments: { path: 'leak.txt' } }] },
  { content: 'It is in src/retry.ts.' },
];

function config(sim: SimServer, workspace: string, extra: Partial<ForkpoolConfigInput> = {}, background: Record<string, unknown> = {}) {
  return makeConfig(sim, workspace, { maxConcurrent: 1, ...background }, { apiKey: SECRET, tools: ['read_file', 'grep'], ...extra });
}

async function leakyWorkspace(cleanup: ReturnType<typeof useCleanup>): Promise<string> {
  const workspace = await makeWorkspace(cleanup);
  writeFileSync(path.join(workspace, 'leak.txt'), `the key is ${SECRET} (keep it safe)\n`);
  return workspace;
}

describe("a job's transcript", () => {
  it('holds its steps in order: model turns with tokens, text and tool calls with their arguments, tool results with their output; no secret', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup, { script: SCRIPT });
    const manager = watchManager(new BackgroundManager({ config: config(sim, await leakyWorkspace(cleanup)) }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const job = manager.spawn({ task: 'Where is the retry backoff?', label: 'backoff' });
    expect((await ended(manager, job.id)).status).toBe('ok');

    const page = manager.transcript(job.id);
    expect(page).toBeDefined();
    const steps = page!.steps;
    expect(steps.map((s) => (s.kind === 'note' ? 'note' : `${s.kind}:${s.kind === 'tool' ? s.name : s.calls.map((c) => c.name).join(',')}`))).toEqual([
      'model:grep',
      'tool:grep',
      'model:read_file',
      'tool:read_file',
      'model:',
    ]);
    expect(steps.map((s) => s.n)).toEqual([1, 2, 3, 4, 5]);
    expect(page).toMatchObject({ total: 5, omitted: 0, offset: 0, kept: 5 });
    const [first, grep, , read, last] = steps;
    expect(first).toMatchObject({ kind: 'model', iteration: 1, text: 'Looking for the backoff.', calls: [{ name: 'grep', args: '{"pattern":"retry"}' }] });
    if (first?.kind !== 'model') throw new Error('not a model step');
    expect(first.promptTokens).toBeGreaterThan(0);
    expect(first.completionTokens).toBeGreaterThan(0);
    expect(first.ms).toBeGreaterThanOrEqual(0);
    expect(grep).toMatchObject({ kind: 'tool', name: 'grep', ok: true });
    expect(grep?.kind === 'tool' && grep.output).toMatch(/src\/retry\.ts/);
    // The file's text reached the transcript, its key did not.
    expect(read?.kind === 'tool' && read.output).toMatch(/the key is \[REDACTED\]/);
    expect(last).toMatchObject({ kind: 'model', text: 'It is in src/retry.ts.', calls: [] });
    expect(JSON.stringify(page)).not.toContain(SECRET);
    // Paged: offset among the kept steps, at most limit of them.
    expect(manager.transcript(job.id, { offset: 3, limit: 1 })?.steps.map((s) => s.n)).toEqual([4]);
    expect(manager.transcript('bg-404')).toBeUndefined();
  });

  it(`is capped: past ${TRANSCRIPT_LIMITS.maxSteps} steps its first ${TRANSCRIPT_LIMITS.headSteps} and its newest stay, and it says how many went`, async () => {
    const cleanup = useCleanup();
    const calls = Array.from({ length: 250 }, (_, i) => ({ name: 'grep', arguments: { pattern: `pattern${i}` } }));
    const sim = await startSim(cleanup, { script: [{ toolCalls: calls }, { content: 'done' }] });
    const manager = watchManager(new BackgroundManager({ config: config(sim, await makeWorkspace(cleanup), { toolLimits: { maxParallelToolCalls: 8 } }) }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const job = manager.spawn({ task: 'grep a lot', label: 'many' });
    await ended(manager, job.id);
    const page = manager.transcript(job.id, { limit: 1_000 })!;
    // 1 model turn + 250 results + the final turn.
    expect(page.total).toBe(252);
    expect(page.kept).toBe(TRANSCRIPT_LIMITS.maxSteps);
    expect(page.omitted).toBe(252 - TRANSCRIPT_LIMITS.maxSteps);
    const numbers = page.steps.map((s) => s.n);
    expect(numbers.slice(0, TRANSCRIPT_LIMITS.headSteps)).toEqual(Array.from({ length: TRANSCRIPT_LIMITS.headSteps }, (_, i) => i + 1));
    expect(numbers.at(-1)).toBe(252);
    // In order, each once.
    expect([...numbers].sort((a, b) => a - b)).toEqual(numbers);
    expect(new Set(numbers).size).toBe(numbers.length);
    // The first turn keeps all its 250 calls' arguments (each is small).
    expect(page.steps[0]?.kind === 'model' && page.steps[0].calls).toHaveLength(250);
  });

  it('survives a restart on the durable ledger, and goes with its result when retention drops it (from the file too)', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup, { script: SCRIPT });
    const file = ledgerFile(cleanup);
    const workspace = await leakyWorkspace(cleanup);
    const first = openSqliteLedger(file);
    const a = watchManager(new BackgroundManager({ config: config(sim, workspace, { ledger: { path: file } }), store: first.jobs('s') }));
    const job = a.spawn({ task: 'Where is the retry backoff?', label: 'backoff' });
    await ended(a, job.id);
    const before = a.transcript(job.id);
    await a.close();
    first.close();
    const raw = new RawDatabase(file);
    const rows = raw.prepare('SELECT data FROM transcripts WHERE scope = ? AND id = ?').all('s', job.id) as Array<{ data: string }>;
    raw.close();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.data).not.toContain(SECRET);

    const second = openSqliteLedger(file);
    cleanup.add(() => second.close());
    const b = watchManager(
      new BackgroundManager({ config: config(sim, workspace, { ledger: { path: file } }, { retention: { keepResults: 0 } }), store: second.jobs('s') }),
    );
    cleanup.add(() => b.close({ timeoutMs: 2_000 }));
    expect(b.transcript(job.id)).toEqual(before);
    expect(before?.total).toBe(5);

    // Delivered with keepResults 0: its result is dropped at once, and its transcript with it.
    expect(drainedIds(b, 1)).toEqual([job.id]);
    expect(b.get(job.id)?.resultDropped).toBe(true);
    expect(b.transcript(job.id)).toMatchObject({ total: 0, kept: 0, steps: [] });
    const check = new RawDatabase(file);
    expect(check.prepare('SELECT id FROM transcripts').all()).toEqual([]);
    check.close();
  });

  it('in memory too, retention dropping the result drops the transcript', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup, { script: SCRIPT });
    const manager = watchManager(new BackgroundManager({ config: config(sim, await leakyWorkspace(cleanup), {}, { retention: { keepResults: 0 } }) }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const job = manager.spawn({ task: 'Where is the retry backoff?', label: 'backoff' });
    await ended(manager, job.id);
    expect(manager.transcript(job.id)?.total).toBe(5);
    drainedIds(manager, 1);
    expect(manager.transcript(job.id)).toMatchObject({ total: 0, steps: [] });
  });

  it('redacts every key the config holds on the main thread as well (an older or remote worker may not have)', () => {
    const cfg = makeConfig(undefined, '/tmp', {}, { apiKey: SECRET });
    const transcripts = new JobTranscripts(cfg, new DeliveryLedger(), undefined);
    transcripts.record('bg-1', {
      type: 'model_response',
      iteration: 1,
      toolCalls: 1,
      usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, requests: 1 },
      model: 'm',
    });
    transcripts.record('bg-1', { type: 'assistant_text', iteration: 1, text: `key ${SECRET}`, final: false });
    transcripts.record('bg-1', { type: 'tool_call', callId: 'c1', name: 'bash', argsPreview: '', args: `{"command":"echo ${SECRET}"}` });
    transcripts.record('bg-1', { type: 'tool_result', callId: 'c1', name: 'bash', ok: true, chars: 10, ms: 1, output: `${SECRET.slice(0, 20)}…` });
    const text = JSON.stringify(transcripts.read('bg-1'));
    expect(text).not.toContain(SECRET.slice(0, 12));
    expect(text.match(/\[REDACTED\]/g)).toHaveLength(3);
  });

  it("reads an event's fields defensively: a worker's event is checked for its type only, and a malformed one never throws on the main thread", () => {
    const transcripts = new JobTranscripts(makeConfig(undefined, '/tmp'), new DeliveryLedger(), undefined);
    const odd = (event: Record<string, unknown>) => transcripts.record('bg-1', event as never);
    expect(() => {
      odd({ type: 'model_response', iteration: 'x', model: 7 });
      odd({ type: 'assistant_text', iteration: 0, text: { not: 'text' } });
      odd({ type: 'tool_call', callId: 1, name: null });
      odd({ type: 'tool_result', output: 42, ms: 'slow' });
      odd({ type: 'messages_received', ids: 'nope' });
      odd({ type: 'retry' });
    }).not.toThrow();
    const page = transcripts.read('bg-1');
    expect(page.steps.map((s) => s.kind)).toEqual(['model', 'tool', 'note', 'note']);
    expect(page.steps[1]).toMatchObject({ kind: 'tool', output: '', ms: 0, ok: false });
  });
});
