/**
 * Bad input (issue 4, item 14), only what test/config.test.ts, test/manager.test.ts and
 * test/cli.test.ts do not already cover: config values JSON cannot hold, a "__proto__" key in a
 * config file; invalid spawn arguments from the parent's model through the real
 * `spawn_background_agent` tool and through the manager; odd fanout lines; a result of 5 MB
 * (kept whole in the record, capped in the parent's injected block).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { CONFIG_FILE_NAME, loadConfig } from '../../src/main/setup/config-load.js';
import type { SpawnRequest } from '../../src/main/jobs/manager.js';
import { parseConfig } from '../../src/shared/config.js';
import { BACKGROUND_RESULTS_CLOSE, BACKGROUND_RESULTS_OPEN } from '../../src/shared/prompts.js';
import type { ScriptToolCall } from '../../src/sim/index.js';
import {
  assertValidHistory,
  configError,
  describeResult,
  makeConfig,
  makeManager,
  makeWorkspace,
  parseJsonLines,
  runCli,
  startSim,
  toolMessagesOf,
  useCleanup,
  watchManager,
} from '../helpers/index.js';

const cleanups = useCleanup();

const POLLUTER = '{"task":"Where is the cache?","label":"proto","__proto__":{"polluted":true}}';
const notPolluted = () => expect((Object.prototype as Record<string, unknown>).polluted ?? ({} as Record<string, unknown>).polluted).toBeUndefined();

describe('invalid configuration', () => {
  it('values a JSON file cannot hold (NaN, Infinity), negatives and null are refused, each naming its field', () => {
    const error = configError(() =>
      parseConfig({ workspaceRoot: '/tmp', maxRetries: NaN, requestTimeoutMs: Infinity, background: { timeoutMinutes: -1, queueLimit: null } }),
    );
    expect(error.issues.map((i) => i.field).sort()).toEqual(['background.queueLimit', 'background.timeoutMinutes', 'maxRetries', 'requestTimeoutMs']);
    expect(error.issues.find((i) => i.field === 'maxRetries')?.received).toBe('NaN');
    expect(error.issues.find((i) => i.field === 'background.queueLimit')?.received).toBe('null');
  });

  it('a "__proto__" key in a config file is refused as an unknown key and pollutes nothing', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'forkpool-config-'));
    cleanups.add(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, CONFIG_FILE_NAME);
    writeFileSync(file, '{"__proto__": {"polluted": true, "maxRetries": 9}, "model": "m"}');
    const error = configError(() => loadConfig({}, {}, dir));
    expect(error.issues).toEqual([{ field: '__proto__', expected: 'no such key (unknown option)', received: 'key "__proto__"', source: file }]);
    notPolluted();
  });

  it('an "agents.__proto__" (or "models.__proto__") key is refused as an invalid name, from a file and from code', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'forkpool-config-'));
    cleanups.add(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, CONFIG_FILE_NAME);
    const text =
      '{"agents": {"__proto__": {"description": "a sneaky agent"}, "helper": {"description": "helps"}}, "models": {"__proto__": {"contextWindow": 8000}}}';
    writeFileSync(file, text);
    const fromFile = configError(() => loadConfig({}, {}, dir));
    expect(fromFile.issues).toEqual([
      {
        field: 'agents.__proto__',
        expected: expect.stringMatching(/^an agent name: .*\("__proto__" is not one\)$/),
        received: 'key "__proto__"',
        source: file,
      },
      { field: 'models.__proto__', expected: 'a model name ("__proto__" is not one)', received: 'key "__proto__"', source: file },
    ]);
    // From code, a parsed JSON object: the layering keeps the key an own key, so it is refused too.
    const fromCode = configError(() => loadConfig({ config: JSON.parse(text) as Record<string, unknown>, cwd: dir }));
    expect(fromCode.issues.map((i) => i.field)).toEqual(['agents.__proto__', 'models.__proto__']);
    notPolluted();
  });
});

describe('invalid spawn arguments', () => {
  const BAD_CALLS: ScriptToolCall[] = [
    { name: 'spawn_background_agent', arguments: { label: 'missing task' } },
    { name: 'spawn_background_agent', arguments: { task: '   ', label: 'empty task' } },
    { name: 'spawn_background_agent', arguments: { task: 42, label: ['wrong', 'types'] } },
    { name: 'spawn_background_agent', arguments: { task: 'Where is the cache?', label: 'flag', full_context: 'yes' } },
    { name: 'spawn_background_agent', arguments: { task: 'Where is the cache?', label: 'L'.repeat(2_000_000) } },
    { name: 'spawn_background_agent', arguments: { task: 'Where is the cache?', label: 'extra', priority: 'high' } },
    { name: 'spawn_background_agent', arguments: POLLUTER },
    { name: 'spawn_background_agent', arguments: '[1, 2, 3]' },
    { name: 'spawn_background_agent', arguments: '{"task": ' },
  ];

  it("from the parent's model through spawn_background_agent: a tool error per call, no job spawned, no prototype pollution", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ toolCalls: BAD_CALLS }, { content: 'None of them started.' }] });
    const session = new AgentSession({ config: makeConfig(sim, root) });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const result = await session.submit('Research the cache, please.');
    await session.onIdle();

    expect(result.stopReason).toBe('final');
    expect(result.answer).toBe('None of them started.');
    const next = sim.requests[1]?.body;
    assertValidHistory(next.messages);
    const errors = toolMessagesOf(next);
    expect(errors).toHaveLength(BAD_CALLS.length);
    for (const error of errors) expect(error).toMatch(/^Error: (invalid arguments for|arguments for) spawn_background_agent/);
    expect(errors[0]).toContain('task');
    expect(errors[4]).toContain('label');
    expect(errors[4]?.length).toBeLessThan(1_000); // the megabyte label is not echoed back
    expect(errors[5]).toContain('priority');
    expect(errors[6]).toContain('__proto__');
    expect(errors[8]).toContain('not valid JSON');
    expect(session.manager.jobs()).toEqual([]);
    notPolluted();
    sim.assertScriptDone();
  });

  it('through the manager: TOOL_ARGUMENTS_INVALID for each, nothing in the ledger, no prototype pollution', async () => {
    const manager = makeManager(makeConfig(undefined, await makeWorkspace(cleanups)), cleanups);
    const requests: unknown[] = [
      {},
      null,
      { task: '', label: 'empty' },
      { task: 5, label: 'number' },
      { task: 'Where?', label: 'x'.repeat(5_000_000) },
      { task: 'x'.repeat(300_000), label: 'task too long' },
      { task: 'Where?', label: 'extra', priority: 1 },
      { task: 'Where?', label: 'role', role: 'root' },
      JSON.parse(POLLUTER),
    ];
    for (const request of requests) {
      expect(() => manager.spawn(request as SpawnRequest), JSON.stringify(request)?.slice(0, 80)).toThrow(
        expect.objectContaining({ code: 'TOOL_ARGUMENTS_INVALID' }),
      );
    }
    expect(manager.jobs()).toEqual([]);
    expect(manager.pending).toBe(0);
    notPolluted();
  });
});

describe('a fanout file with odd lines', () => {
  it('each bad line is reported with its number; the good lines run', async () => {
    const sim = await startSim(cleanups);
    const cwd = await makeWorkspace(cleanups);
    const lines = [
      JSON.stringify({ task: 'Where is the retry backoff implemented?', label: 'good 1' }),
      '[1, 2]',
      '{"task": 5}',
      POLLUTER,
      JSON.stringify({ task: 'Where?', label: 'x'.repeat(300) }),
      'null',
      '"just a string"',
      JSON.stringify({ task: 'Where?', extra: true }),
      JSON.stringify({ task: 'Where is the LRU cache?', label: 'good 9' }),
    ];
    writeFileSync(path.join(cwd, 'odd.jsonl'), `${lines.join('\n')}\n`);
    const r = await runCli(['fanout', '--base-url', sim.url, 'odd.jsonl'], { cwd, cleanup: cleanups });
    expect(r.code, describeResult(r)).toBe(1);
    const results = parseJsonLines(r.stdout);
    expect(results.map((x) => x.line).sort()).toEqual([1, 9]);
    for (const result of results) expect(['ok', 'partial']).toContain(result.status);
    for (const line of [2, 3, 4, 5, 6, 7, 8]) expect(r.stderr).toMatch(new RegExp(`line ${line}: .+\\(skipped\\)`));
    expect(r.stderr).toContain('7 invalid line(s)');
    expect(r.stderr).toMatch(/line 4: .*__proto__/);
  });
});

describe('a result of many megabytes', () => {
  it('a 5 MB answer is kept whole in the record; the block injected into the parent is capped, head and tail kept', async () => {
    const body = `HEAD-MARKER\n${`${'x'.repeat(99)}\n`.repeat(50_000)}TAIL-MARKER`;
    const root = await makeWorkspace(cleanups);
    // Big chunks: the 5 MB travel as a handful of SSE events, not a million.
    const sim = await startSim(cleanups, {
      maxTokensPerChunk: 1_000_000,
      script: [{ content: `${body}\n<result status="ok" files_touched="big.txt"/>` }, { content: 'Noted the big result.' }],
    });
    const config = makeConfig(sim, root);
    const session = new AgentSession({ config });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    // A person's job: it runs alone, then its result starts one follow-up turn of the parent.
    const { id } = session.startUserJob('Produce a very long answer.', 'big');
    const delivered = new Promise<number>((resolve) => session.on('delivered', ({ turn }) => resolve(turn)));
    await delivered;
    await session.onIdle();

    const record = session.manager.get(id);
    expect(record?.status).toBe('ok');
    expect(record?.resultText).toBe(body);
    expect(record?.resultText?.length).toBeGreaterThan(5_000_000);
    const parentTurn = sim.requests[1]?.body.messages as Array<{ role: string; content: string }>;
    const input = parentTurn.filter((m) => m.role === 'user').at(-1)?.content ?? '';
    const block = input.slice(input.indexOf(BACKGROUND_RESULTS_OPEN), input.indexOf(BACKGROUND_RESULTS_CLOSE) + BACKGROUND_RESULTS_CLOSE.length);
    expect(block.startsWith(BACKGROUND_RESULTS_OPEN)).toBe(true);
    expect(block).toContain('| HEAD-MARKER');
    expect(block).toContain('| TAIL-MARKER');
    expect(block).toMatch(/characters omitted/);
    // The cap plus a header and the "| " quoting of each kept line.
    const { resultMaxChars } = config.background;
    expect(block.length).toBeLessThan(resultMaxChars + resultMaxChars / 50 + 500);
    expect(input.length).toBeLessThan(resultMaxChars + 1_500);
    sim.assertScriptDone();
  });
});
