/**
 * resume_background_agent (src/main/jobs/resumes.ts): an ended job's kept conversation goes on
 * with a new instruction as a new job (`resumedFrom`), through the real pool on the simulator;
 * delivered once; after a restart on the durable ledger; on a ledger of the previous schema;
 * and its refusals.
 */
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import { resumeTool } from '../../../src/main/session/resume-tool.js';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { JobError, ToolError } from '../../../src/shared/errors.js';
import type { SimServer } from '../../../src/sim/index.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import {
  ended,
  ledgerFile,
  makeConfig,
  makeWorkspace,
  messagesOf,
  RawDatabase,
  requestsForTask,
  startSim,
  toolMessagesOf,
  cleanupOf,
  watchManager,
  type Cleanup,
} from '../../helpers/index.js';

const TASK = 'Where is the retry backoff implemented? Answer from the files in the workspace.';
const INSTRUCTION = 'Now say which file holds the LRU cache.';
const SECRET = 'sk-resume-secret-0123456789';

function config(sim: SimServer, workspace: string, extra: Partial<ForkpoolConfigInput> = {}, background: Record<string, unknown> = {}) {
  return makeConfig(sim, workspace, { maxConcurrent: 2, ...background }, { apiKey: SECRET, tools: ['read_file', 'find_files', 'grep', 'list_dir'], ...extra });
}

/** The sim's requests of the job whose conversation ends with `instruction` as its newest user message. */
function requestsEndingWith(sim: SimServer, instruction: string) {
  return sim.requests.filter((r) => {
    const users = messagesOf(r).filter((m) => m.role === 'user');
    return users.at(-1)?.content === instruction;
  });
}

/** The old job's whole conversation as the sim last saw it, plus the answer it gave to that request. */
function oldConversation(sim: SimServer, task: string, answer: string) {
  const last = requestsForTask(sim, task).at(-1);
  expect(last).toBeDefined();
  return { messages: messagesOf(last!), answer };
}

/** A typed job's answer: its submit_result call. */
function submit(value: Record<string, unknown>) {
  return { toolCalls: [{ name: 'submit_result', arguments: value }] };
}

function errorOf(fn: () => unknown): JobError {
  try {
    fn();
  } catch (error) {
    return error as JobError;
  }
  throw new Error('expected a refusal');
}

/** The first process on a durable ledger: a sim, a ledger file, a workspace, its store and manager. */
async function firstProcess(cleanup: Cleanup) {
  const sim = await startSim(cleanup);
  const file = ledgerFile(cleanup);
  const workspace = await makeWorkspace(cleanup);
  const first = openSqliteLedger(file);
  const a = watchManager(new BackgroundManager({ config: config(sim, workspace, { ledger: { path: file } }), store: first.jobs('s') }));
  return { sim, file, workspace, first, a };
}

// Each test has its own sim, ledger and cleanup list (cleanupOf): they run side by side.
describe.concurrent('resume a finished job', () => {
  it('continues the saved conversation with the new instruction as a new job resumedFrom the old; each result delivered once', async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup);
    const manager = watchManager(new BackgroundManager({ config: config(sim, await makeWorkspace(cleanup)) }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const old = manager.spawn({ task: TASK, label: 'retry' });
    const oldRecord = await ended(manager, old.id);
    expect(oldRecord.status).toBe('ok');
    const deliveries = new Deliveries(manager);
    expect(deliveries.drain(1).map((r) => r.id)).toEqual([old.id]);
    const before = oldConversation(sim, TASK, oldRecord.resultText ?? '');

    const resumed = manager.parentControls.resume(old.id, INSTRUCTION);
    expect(resumed.id).not.toBe(old.id);
    expect(manager.get(resumed.id)).toMatchObject({ resumedFrom: old.id, task: INSTRUCTION, label: 'retry' });
    const record = await ended(manager, resumed.id);
    expect(record.status).toBe('ok');

    // Its first model request: every message the old job's last request had, its answer, then the instruction.
    const first = requestsEndingWith(sim, INSTRUCTION)[0];
    expect(first).toBeDefined();
    const sent = messagesOf(first!);
    expect(sent.slice(0, before.messages.length)).toEqual(before.messages);
    expect(sent[before.messages.length]).toMatchObject({ role: 'assistant' });
    expect(sent.at(-1)).toEqual({ role: 'user', content: INSTRUCTION });
    expect(sent).toHaveLength(before.messages.length + 2);
    // Its own budget: its model calls are its own, not the old job's plus its own.
    expect(record.iterations).toBe(requestsEndingWith(sim, INSTRUCTION).length);
    // The old record is untouched: ended and delivered once, in turn 1.
    expect(manager.get(old.id)).toMatchObject({ state: 'ended', deliveredInTurn: 1 });

    expect(deliveries.drain(2).map((r) => r.id)).toEqual([resumed.id]);
    expect(deliveries.drain(3)).toEqual([]);
    expect(manager.get(resumed.id)?.deliveredInTurn).toBe(2);
  });

  it('after a restart on the durable ledger: a new manager on the same file resumes it, with the saved conversation, secrets redacted', async (context) => {
    const cleanup = cleanupOf(context);
    const { sim, file, workspace, first, a } = await firstProcess(cleanup);
    const task = `${TASK} (the key is ${SECRET})`;
    const old = a.spawn({ task, label: 'durable' });
    await ended(a, old.id);
    expect(new Deliveries(a).drain(1).map((r) => r.id)).toEqual([old.id]);
    const before = oldConversation(sim, task, '');
    await a.close();
    first.close();

    // The kept conversation on disk has no secret (the task's copy of the key was redacted).
    const raw = new RawDatabase(file);
    const rows = raw.prepare('SELECT conversation FROM jobs WHERE id = ?').all(old.id) as Array<{ conversation: string | null }>;
    raw.close();
    expect(rows[0]?.conversation).toContain('[REDACTED]');
    expect(rows[0]?.conversation).not.toContain(SECRET);

    const second = openSqliteLedger(file);
    cleanup.add(() => second.close());
    const b = watchManager(new BackgroundManager({ config: config(sim, workspace, { ledger: { path: file } }), store: second.jobs('s') }));
    cleanup.add(() => b.close({ timeoutMs: 2_000 }));
    const resumed = b.parentControls.resume(old.id, INSTRUCTION);
    const record = await ended(b, resumed.id);
    expect(record).toMatchObject({ status: 'ok', resumedFrom: old.id });
    const sent = messagesOf(requestsEndingWith(sim, INSTRUCTION)[0]!);
    // The same conversation, read back from the file (its secret redacted, the rest as it was).
    expect(sent).toHaveLength(before.messages.length + 2);
    expect(sent[0]).toEqual(before.messages[0]);
    expect(String(sent[1]?.content)).toContain('the key is [REDACTED]');
    expect(sent.at(-1)).toEqual({ role: 'user', content: INSTRUCTION });
    const deliveries = new Deliveries(b);
    expect(deliveries.drain(2).map((r) => r.id)).toEqual([resumed.id]);
    expect(deliveries.drain(3)).toEqual([]);
  });

  it("a resume still queued when its process closed runs after the restart from the old job's conversation (recovery rebuilds its state)", async (context) => {
    const cleanup = cleanupOf(context);
    const { sim, file, workspace, first, a } = await firstProcess(cleanup);
    const old = a.spawn({ task: TASK, label: 'queued-resume' });
    await ended(a, old.id);
    const before = oldConversation(sim, TASK, '');
    // Closed in the same tick: the resumed job never launched, and stays queued in the ledger.
    const resumed = a.parentControls.resume(old.id, INSTRUCTION);
    await a.close();
    first.close();
    expect(requestsEndingWith(sim, INSTRUCTION)).toEqual([]);

    const second = openSqliteLedger(file);
    cleanup.add(() => second.close());
    const b = watchManager(new BackgroundManager({ config: config(sim, workspace, { ledger: { path: file } }), store: second.jobs('s') }));
    cleanup.add(() => b.close({ timeoutMs: 2_000 }));
    expect(b.recovery?.requeued).toEqual([resumed.id]);
    expect((await ended(b, resumed.id)).resumedFrom).toBe(old.id);
    const sent = messagesOf(requestsEndingWith(sim, INSTRUCTION)[0]!);
    expect(sent.slice(0, before.messages.length)).toEqual(before.messages);
    expect(sent).toHaveLength(before.messages.length + 2);
  });

  it('a queued resume whose old conversation is gone after the restart is not run from its instruction alone: it ends RESUME_UNAVAILABLE', async (context) => {
    const cleanup = cleanupOf(context);
    const { sim, file, workspace, first, a } = await firstProcess(cleanup);
    const old = a.spawn({ task: TASK, label: 'lost' });
    await ended(a, old.id);
    expect(new Deliveries(a).drain(1).map((r) => r.id)).toEqual([old.id]);
    const resumed = a.parentControls.resume(old.id, INSTRUCTION);
    await a.close();
    first.close();
    // As if retention had forgotten the old job's row: its conversation with it.
    const raw = new RawDatabase(file);
    raw.prepare('UPDATE jobs SET conversation = NULL WHERE id = ?').run(old.id);
    raw.close();

    const second = openSqliteLedger(file);
    cleanup.add(() => second.close());
    const b = watchManager(new BackgroundManager({ config: config(sim, workspace, { ledger: { path: file } }), store: second.jobs('s') }));
    cleanup.add(() => b.close({ timeoutMs: 2_000 }));
    expect(b.recovery?.interrupted).toEqual([resumed.id]);
    expect(b.get(resumed.id)).toMatchObject({ state: 'ended', status: 'failed', error: { code: 'RESUME_UNAVAILABLE' } });
    await b.onIdle();
    expect(sim.requests.filter((r) => messagesOf(r).some((m) => m.content === INSTRUCTION))).toEqual([]);
    expect(new Deliveries(b).drain(2).map((r) => r.id)).toEqual([resumed.id]);
  });

  it('an over-long conversation is cut to background.keepConversationChars: its head, a note, the newest messages (never a tool result first)', async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup);
    const workspace = await makeWorkspace(cleanup);
    const probe = watchManager(new BackgroundManager({ config: config(sim, workspace) }));
    cleanup.add(() => probe.close({ timeoutMs: 2_000 }));
    await ended(probe, probe.spawn({ task: TASK, label: 'probe' }).id);
    const whole = oldConversation(sim, TASK, '').messages;
    expect(whole.length).toBeGreaterThan(3);
    // Room for the head (system + task), the note and a little more: the middle must go.
    const cap = JSON.stringify(whole.slice(0, 2)).length + 400;
    const manager = watchManager(new BackgroundManager({ config: config(sim, workspace, {}, { keepConversationChars: cap }) }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const old = manager.spawn({ task: TASK, label: 'cut' });
    await ended(manager, old.id);
    const resumed = manager.parentControls.resume(old.id, INSTRUCTION);
    await ended(manager, resumed.id);
    const sent = messagesOf(requestsEndingWith(sim, INSTRUCTION)[0]!);
    const kept = sent.slice(0, -1);
    expect(JSON.stringify(kept).length).toBeLessThanOrEqual(cap);
    expect(kept.slice(0, 2)).toEqual(whole.slice(0, 2));
    expect(String(kept[2]?.content)).toMatch(/^\[forkpool: \d+ earlier messages of this conversation were cut to fit background\.keepConversationChars\]$/);
    expect(kept[3]?.role).not.toBe('tool');
    expect(kept.length).toBeLessThan(whole.length + 1);
  });

  it('opens a ledger of the previous schema (2): migrated to 3, its jobs kept; an old job has no conversation (refused), a new one is resumable', async (context) => {
    const cleanup = cleanupOf(context);
    const { sim, file, workspace, first, a } = await firstProcess(cleanup);
    const old = a.spawn({ task: TASK, label: 'v2' });
    await ended(a, old.id);
    await a.close();
    first.close();
    // Back to schema 2 as forkpool before this change wrote it: no conversation column, version 2.
    const raw = new RawDatabase(file);
    raw.prepare('ALTER TABLE jobs DROP COLUMN conversation').run();
    raw.prepare("UPDATE meta SET value = '2' WHERE key = 'schema'").run();
    raw.prepare('PRAGMA user_version = 2').run();
    raw.close();

    const second = openSqliteLedger(file);
    cleanup.add(() => second.close());
    const b = watchManager(new BackgroundManager({ config: config(sim, workspace, { ledger: { path: file } }), store: second.jobs('s') }));
    cleanup.add(() => b.close({ timeoutMs: 2_000 }));
    expect(b.get(old.id)).toMatchObject({ state: 'ended', status: 'ok' });
    expect(b.recovery?.invalid).toEqual([]);
    const check = new RawDatabase(file);
    expect(check.prepare('PRAGMA user_version').all()).toEqual([{ user_version: 6 }]);
    check.close();
    const refused = errorOf(() => b.parentControls.resume(old.id, INSTRUCTION));
    expect(refused).toMatchObject({ code: 'RESUME_UNAVAILABLE', jobId: old.id });
    expect(refused.message).toMatch(/conversation was not kept/);

    const fresh = b.spawn({ task: `${TASK} (again)`, label: 'v3' });
    await ended(b, fresh.id);
    const resumed = b.parentControls.resume(fresh.id, INSTRUCTION);
    expect((await ended(b, resumed.id)).resumedFrom).toBe(fresh.id);
  });

  it('refuses an unknown job, one that has not ended, one whose conversation was not kept, and a bad message; the tool says so and nothing starts', async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup, { latencyMs: 150 });
    const workspace = await makeWorkspace(cleanup);
    const manager = watchManager(new BackgroundManager({ config: config(sim, workspace) }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    expect(errorOf(() => manager.parentControls.resume('bg-99', INSTRUCTION))).toMatchObject({ code: 'JOB_UNKNOWN' });
    const running = manager.spawn({ task: TASK, label: 'running' });
    const notEnded = errorOf(() => manager.parentControls.resume(running.id, INSTRUCTION));
    expect(notEnded).toMatchObject({ code: 'RESUME_UNAVAILABLE', jobId: running.id });
    expect(notEnded.message).toMatch(/has not ended \(it is queued\)/);
    await ended(manager, running.id);
    expect(errorOf(() => manager.parentControls.resume(running.id, '   '))).toMatchObject({ code: 'TOOL_ARGUMENTS_INVALID' });
    expect(errorOf(() => manager.parentControls.resume(running.id, '   ')).message).toMatch(/field "message".*received 0 characters/);

    const tool = resumeTool({ controls: manager.parentControls, currentTurn: () => 1 });
    const toolError = await tool.run({ job_id: 'bg-42', message: INSTRUCTION }, undefined as never).catch((error: unknown) => error);
    expect(toolError).toBeInstanceOf(ToolError);
    expect(toolError).toMatchObject({ code: 'JOB_UNKNOWN', toolName: 'resume_background_agent' });
    const jobs = manager.jobs().length;

    // Not kept at all (keepConversationChars 0): refused too.
    const none = watchManager(new BackgroundManager({ config: config(sim, workspace, {}, { keepConversationChars: 0 }) }));
    cleanup.add(() => none.close({ timeoutMs: 2_000 }));
    const job = none.spawn({ task: TASK, label: 'unkept' });
    await ended(none, job.id);
    expect(errorOf(() => none.parentControls.resume(job.id, INSTRUCTION))).toMatchObject({ code: 'RESUME_UNAVAILABLE' });
    expect(none.jobs()).toHaveLength(1);
    expect(manager.jobs()).toHaveLength(jobs);
    // And through the tool, on an ended job it works: a new job.
    const ok = await tool.run({ job_id: running.id, message: INSTRUCTION }, undefined as never);
    expect(ok).toMatch(/^Resumed background agent bg-1 as job bg-2/);
    expect(manager.get('bg-2')).toMatchObject({ resumedFrom: running.id, wave: 1 });
  });

  it("is one of the parent's tools: an unknown id through a session's turn is a tool error to the model, nothing starts", async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup, {
      script: [
        { toolCalls: [{ name: 'resume_background_agent', arguments: { job_id: 'bg-404', message: INSTRUCTION } }] },
        { content: 'There was no such job.' },
      ],
    });
    const session = new AgentSession({ config: makeConfig(sim, await makeWorkspace(cleanup)) });
    watchManager(session.manager);
    cleanup.add(() => session.close({ timeoutMs: 2_000 }));
    const result = await session.submit('Resume job bg-404.');
    expect(result.stopReason).toBe('final');
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Error: no background job with id or name "bg-404"']);
    expect(session.manager.jobs()).toEqual([]);
  });
});

// Alone, after the group above: its first resume must answer within the spawn's 1.5 s turn deadline.
describe('resume a finished job: its turn deadline', () => {
  it("keeps its spawn's outputSchema and turnTimeoutMs: the resumed answer is typed, and a resume of that one ends TURN_TIMEOUT at the spawn's deadline", async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup, {
      script: [submit({ file: 'src/retry.ts' }), submit({ file: 'src/cache.ts' }), { content: 'never sent' }],
      faults: { 3: { kind: 'hang_before_headers' } },
    });
    const far = { requestTimeoutMs: 600_000, streamIdleTimeoutMs: 600_000, firstByteTimeoutMs: 600_000, turnTimeoutMs: 0 };
    const manager = watchManager(new BackgroundManager({ config: config(sim, await makeWorkspace(cleanup), far) }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const outputSchema = { type: 'object', properties: { file: { type: 'string' } }, required: ['file'], additionalProperties: false };
    const old = manager.spawn({ task: TASK, label: 'typed', outputSchema, turnTimeoutMs: 1_500 });
    expect(await ended(manager, old.id)).toMatchObject({ status: 'ok', data: { file: 'src/retry.ts' } });

    const resumed = await ended(manager, manager.parentControls.resume(old.id, INSTRUCTION).id);
    expect(resumed).toMatchObject({ status: 'ok', data: { file: 'src/cache.ts' } });
    const again = await ended(manager, manager.parentControls.resume(resumed.id, 'And the tool loop?').id);
    expect(again).toMatchObject({ status: 'failed', error: { code: 'TURN_TIMEOUT', timeoutMs: 1_500 } });
  }, 60_000);
});
