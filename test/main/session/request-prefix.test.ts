/**
 * The fixed part of every model request (system prompt + tools JSON), measured on the requests the
 * sim receives through the real session and pool, default config: its bytes stay under the issue-40
 * targets, and it is byte-identical across a job's turns and across jobs of one agent (so provider
 * prompt caching applies). Prints bytes and a token estimate per tool (FORKPOOL_PREFIX_REPORT=1).
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { createModelClient } from '../../../src/shared/model-call.js';
import type { RecordedRequest } from '../../../src/sim/index.js';
import { estimateTokens } from '../../../src/shared/token-estimate.js';
import { makeConfig, makeWorkspace, messagesOf, startSim, toolMessagesOf, toolSchema, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();

/** issue 40's targets for the fixed part of a request, in bytes (UTF-8). */
const PARENT_PREFIX_MAX_BYTES = 8_000;
const JOB_PREFIX_MAX_BYTES = 3_500;

const TASK_A = 'Where is the retry backoff implemented? Answer from the files in the workspace.';
const TASK_B = 'Which file holds the LRU cache? Answer from the files in the workspace.';

interface Prefix {
  system: string;
  tools: string;
  bytes: number;
  perTool: Array<{ name: string; bytes: number; tokens: number }>;
}

function prefixOf(request: RecordedRequest): Prefix {
  const first = messagesOf(request)[0];
  const system = first?.role === 'system' ? JSON.stringify(first) : '';
  const toolList = (request.body.tools ?? []) as Array<{ function: { name: string } }>;
  const tools = JSON.stringify(toolList);
  const perTool = toolList.map((t) => {
    const json = JSON.stringify(t);
    return { name: t.function.name, bytes: Buffer.byteLength(json), tokens: estimateTokens(json) };
  });
  return { system, tools, bytes: Buffer.byteLength(system) + Buffer.byteLength(tools), perTool };
}

function report(label: string, p: Prefix): void {
  if (!process.env['FORKPOOL_PREFIX_REPORT']) return;
  const lines = p.perTool.map((t) => `  ${t.name.padEnd(32)} ${String(t.bytes).padStart(6)} B ${String(t.tokens).padStart(5)} tok`);
  const systemTokens = estimateTokens(p.system);
  console.log(
    `${label}: ${p.bytes} B fixed (system ${Buffer.byteLength(p.system)} B ~${systemTokens} tok, tools ${Buffer.byteLength(p.tools)} B, ${p.perTool.length} tools ~${estimateTokens(p.tools)} tok)\n${lines.join('\n')}`,
  );
}

async function twoJobsRun() {
  const root = await makeWorkspace(cleanups);
  const jobsSim = await startSim(cleanups);
  const parentSim = await startSim(cleanups, {
    script: [
      {
        toolCalls: [
          { id: 'c1', name: 'spawn_background_agent', arguments: { task: TASK_A, label: 'a' } },
          { id: 'c2', name: 'spawn_background_agent', arguments: { task: TASK_B, label: 'b' } },
        ],
      },
      { content: 'Two agents are on it.' },
      { content: 'Both answered.' },
    ],
  });
  const config = makeConfig(jobsSim, root);
  const session = new AgentSession({
    config,
    closeExecutor: true,
    client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
  });
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  await session.submit('Research two things in the background.');
  await session.manager.onIdle();
  await session.onIdle();
  const userTextOf = (r: RecordedRequest) => {
    const content = messagesOf(r).find((m) => m.role === 'user')?.content;
    return typeof content === 'string' ? content : '';
  };
  return {
    parent: parentSim.requests,
    jobA: jobsSim.requests.filter((r) => userTextOf(r).includes(TASK_A)),
    jobB: jobsSim.requests.filter((r) => userTextOf(r).includes(TASK_B)),
  };
}

describe('the fixed part of a model request (issue 40)', () => {
  it('parent and job prefixes stay under the byte targets, and a job prefix is byte-identical across its turns and across jobs', async () => {
    const { parent, jobA, jobB } = await twoJobsRun();
    const parentFirst = prefixOf(parent[0]!);
    const jobFirst = prefixOf(jobA[0]!);
    report('parent', parentFirst);
    report('job', jobFirst);
    expect(parentFirst.bytes).toBeLessThanOrEqual(PARENT_PREFIX_MAX_BYTES);
    expect(jobFirst.bytes).toBeLessThanOrEqual(JOB_PREFIX_MAX_BYTES);
    // A stable prefix: every request of both jobs (several turns each) carries the same bytes.
    expect(jobA.length).toBeGreaterThan(1);
    expect(jobB.length).toBeGreaterThan(1);
    for (const r of [...jobA, ...jobB]) {
      const p = prefixOf(r);
      expect(p.system).toBe(jobFirst.system);
      expect(p.tools).toBe(jobFirst.tools);
    }
    for (const r of parent) expect(prefixOf(r).tools).toBe(parentFirst.tools);
    for (const r of parent) expect(prefixOf(r).system).toBe(parentFirst.system);
    if (process.env['FORKPOOL_PREFIX_REPORT']) {
      // The cacheable share of a job's input: the prefix's characters over all characters sent, over its turns.
      const sent = jobA.reduce((n, r) => n + JSON.stringify({ m: r.body.messages, t: r.body.tools }).length, 0);
      const cached = jobA.length * (jobFirst.system.length + jobFirst.tools.length);
      console.log(`job turns ${jobA.length}; cacheable share of input ${((100 * cached) / sent).toFixed(1)}%`);
    }
  });
});

describe('the compact tool schemas (issue 40)', () => {
  it('a call past a bound the model was not sent comes back as a tool error naming the field and the bound', async () => {
    const root = await makeWorkspace(cleanups);
    const parentSim = await startSim(cleanups, {
      script: [{ toolCalls: [{ id: 'c1', name: 'read_file', arguments: { path: 'src/retry.ts', offset: 0 } }] }, { content: 'Could not read it.' }],
    });
    const session = new AgentSession({
      config: makeConfig(undefined, root),
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    await session.submit('Read the retry file from line 0.');
    // The sent schema has no `minimum`; the validation still has it, and says so.
    expect(JSON.stringify(toolSchema(parentSim.requests[0]!, 'read_file'))).not.toContain('minimum');
    const [answer] = toolMessagesOf(parentSim.requests[1]!.body);
    if (process.env['FORKPOOL_PREFIX_REPORT']) console.log(answer);
    expect(answer).toMatch(/^Error: invalid arguments for read_file/);
    expect(answer).toContain('offset');
    expect(answer).toMatch(/>=\s*1/);
  });
});
