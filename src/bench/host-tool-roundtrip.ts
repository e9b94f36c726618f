/**
 * A host tool's round trip against a direct call, with 1,000 jobs in flight in `shared`
 * isolation (issue 34 §2: "≤ 0.3 ms p50 over a direct call"). Half the jobs call `host_echo`
 * (a host tool: the call crosses the job's port to the main thread and back), half call
 * `module_echo` (the same no-op as a tool module: a direct call in the job's thread), each
 * `--calls` times, all at once, on one manager. A call's time is taken on the main thread, from
 * its `tool_call` event to its `tool_result` event (both posted by the job's thread, so the
 * delivery of each is in both kinds alike); the overhead is the difference of the two medians.
 *
 *   npm run build && node dist/bench/host-tool-roundtrip.js [--jobs 1000] [--calls 5] [--json]
 *
 * The model is a loopback stand-in (non-streamed chat completions): a job's model calls its
 * tool until it has `--calls` results, then answers.
 */
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BackgroundManager } from '../main/jobs/manager.js';
import { parseConfig } from '../shared/config.js';
import { tool } from '../shared/tool-contract.js';

const { values } = parseArgs({
  options: { jobs: { type: 'string', default: '1000' }, calls: { type: 'string', default: '5' }, json: { type: 'boolean', default: false } },
});
const JOBS = Number(values.jobs);
const CALLS = Number(values.calls);

const MODULE = `export default [{ name: 'module_echo', description: 'Echoes.', parameters: { type: 'object', properties: { n: { type: 'integer' } } }, run: ({ n }) => String(n) }];\n`;

/** A job's model: its task names its tool; it calls it until it has CALLS results, then answers. */
function model(req: IncomingMessage, res: ServerResponse): void {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    const { messages } = JSON.parse(body) as { messages: Array<{ role: string; content: string | null }> };
    const task = messages.find((m) => m.role === 'user')?.content ?? '';
    const done = messages.filter((m) => m.role === 'tool').length;
    const name = task.includes('host_echo') ? 'host_echo' : 'module_echo';
    const message =
      done < CALLS
        ? { role: 'assistant', content: null, tool_calls: [{ id: `c${done}`, type: 'function', function: { name, arguments: JSON.stringify({ n: done }) } }] }
        : { role: 'assistant', content: 'done' };
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        id: 'x',
        object: 'chat.completion',
        created: 0,
        model: 'bench',
        choices: [{ index: 0, message, finish_reason: done < CALLS ? 'tool_calls' : 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}

async function main(): Promise<void> {
  const server = createServer(model);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-host-bench-'));
  const modulePath = path.join(dir, 'echo-tools.mjs');
  writeFileSync(modulePath, MODULE);
  const hostEcho = tool({
    name: 'host_echo',
    description: 'Echoes.',
    parameters: { type: 'object', properties: { n: { type: 'integer' } } },
    run: ({ n }: { n: number }) => String(n),
  });
  const config = parseConfig({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    apiKey: 'bench',
    stream: false,
    maxRetries: 0,
    workspaceRoot: dir,
    tools: ['host_echo', 'module_echo'],
    toolModules: [modulePath],
    background: { isolation: 'shared', maxConcurrent: JOBS, timeoutMinutes: 30, maxAlertsPerJob: 0, budget: { maxTurns: CALLS + 5 } },
  });
  const manager = new BackgroundManager({ config, tools: [hostEcho] });
  const started = new Map<string, number>();
  const times: Record<'host_echo' | 'module_echo', number[]> = { host_echo: [], module_echo: [] };
  manager.on('progress', ({ jobId, event }) => {
    if (event.type === 'tool_call') started.set(`${jobId}/${event.callId}`, performance.now());
    if (event.type === 'tool_result' && (event.name === 'host_echo' || event.name === 'module_echo')) {
      const key = `${jobId}/${event.callId}`;
      const at = started.get(key);
      started.delete(key);
      if (at !== undefined) times[event.name].push(performance.now() - at);
    }
  });
  const wallStart = performance.now();
  const ids = Array.from(
    { length: JOBS },
    (_, i) => manager.spawn({ task: `call ${i % 2 === 0 ? 'host_echo' : 'module_echo'} (job ${i})`, label: `j${i}` }).id,
  );
  const records = await Promise.all(ids.map((id) => manager.result(id)));
  const wallMs = performance.now() - wallStart;
  await manager.close();
  server.close();
  rmSync(dir, { recursive: true, force: true });
  const summary = (list: number[]) => {
    const sorted = [...list].sort((a, b) => a - b);
    return { calls: sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99) };
  };
  const host = summary(times.host_echo);
  const direct = summary(times.module_echo);
  const result = {
    jobs: JOBS,
    callsPerJob: CALLS,
    isolation: 'shared',
    ok: records.filter((r) => r.status === 'ok').length,
    wallMs: Math.round(wallMs),
    host,
    direct,
    overheadP50Ms: host.p50 - direct.p50,
  };
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    const ms = (n: number) => `${n.toFixed(3)} ms`;
    process.stdout.write(
      [
        `${JOBS} jobs in flight (shared isolation), ${CALLS} calls each; ${result.ok} ended ok in ${result.wallMs} ms`,
        `host tool   p50 ${ms(host.p50)}  p90 ${ms(host.p90)}  p99 ${ms(host.p99)}  (${host.calls} calls)`,
        `direct call p50 ${ms(direct.p50)}  p90 ${ms(direct.p90)}  p99 ${ms(direct.p99)}  (${direct.calls} calls)`,
        `round-trip overhead at p50: ${ms(result.overheadP50Ms)}`,
      ].join('\n') + '\n',
    );
  }
}

await main();
