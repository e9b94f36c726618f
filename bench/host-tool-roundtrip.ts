/**
 * A host tool's round trip against a direct call, with 1,000 jobs in flight in `shared`
 * isolation (issue 34 §2: "≤ 0.3 ms p50 over a direct call").
 *
 * 1. Latency: `--jobs` jobs are held in flight, each waiting in a host tool (`host_hold`) until
 *    the probe is done. One probe job then makes `--probe-calls` sequential calls alternating
 *    `host_echo` (a host tool: the call crosses the job's port to the main thread and back) and
 *    `module_echo` (the same no-op as a tool module: a direct call in the job's thread), so both
 *    kinds see the same load. A call is timed on the main thread from its `tool_call` event to
 *    its `tool_result` event (both posted by the job's thread: their delivery is in both kinds
 *    alike). A bare worker-thread message echo, timed in the same state, is the floor of any
 *    cross-thread round trip on this machine.
 * 2. Throughput (the older figure, not a round trip): `--jobs` jobs each call `host_echo`
 *    `--burst-calls` times, all at once; host calls per second over the wall time.
 *
 *   npm run bench:build && node dist-bench/bench/host-tool-roundtrip.js [--jobs 1000] [--probe-calls 400] [--burst-calls 5] [--json]
 *
 * The model is a loopback stand-in (non-streamed chat completions, no latency) on the main thread.
 */
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { BackgroundManager, tool } from 'forkpool';
import { parseConfig } from 'forkpool/protocol';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000' },
    'probe-calls': { type: 'string', default: '400' },
    'burst-calls': { type: 'string', default: '5' },
    json: { type: 'boolean', default: false },
  },
});
const JOBS = Number(values.jobs);
const PROBE_CALLS = Number(values['probe-calls']);
const BURST_CALLS = Number(values['burst-calls']);

const MODULE = `export default [{ name: 'module_echo', description: 'Echoes.', parameters: { type: 'object', properties: { n: { type: 'integer' } } }, run: ({ n }) => String(n) }];\n`;

/** The tool a job's model calls next, by its task and the results it has; undefined: it answers. */
function nextTool(task: string, done: number): string | undefined {
  if (task.startsWith('hold')) return done < 1 ? 'host_hold' : undefined;
  if (task.startsWith('probe')) return done < PROBE_CALLS ? (done % 2 === 0 ? 'host_echo' : 'module_echo') : undefined;
  return done < BURST_CALLS ? 'host_echo' : undefined;
}

function model(req: IncomingMessage, res: ServerResponse): void {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    const { messages } = JSON.parse(body) as { messages: Array<{ role: string; content: string | null }> };
    const done = messages.filter((m) => m.role === 'tool').length;
    const name = nextTool(messages.find((m) => m.role === 'user')?.content ?? '', done);
    const message = name
      ? { role: 'assistant', content: null, tool_calls: [{ id: `c${done}`, type: 'function', function: { name, arguments: JSON.stringify({ n: done }) } }] }
      : { role: 'assistant', content: 'done' };
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        id: 'x',
        object: 'chat.completion',
        created: 0,
        model: 'bench',
        choices: [{ index: 0, message, finish_reason: name ? 'tool_calls' : 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });
}

function summary(list: number[]): { calls: number; p50: number; p90: number; p99: number } {
  const sorted = [...list].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
  return { calls: sorted.length, p50: at(50), p90: at(90), p99: at(99) };
}

/** `count` sequential round trips of a message to a bare worker thread that echoes it. */
async function bareEcho(count: number): Promise<number[]> {
  const worker = new Worker("require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m));", {
    eval: true,
  });
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const at = performance.now();
    await new Promise((resolve) => {
      worker.once('message', resolve);
      worker.postMessage({ n: i });
    });
    times.push(performance.now() - at);
  }
  await worker.terminate();
  return times;
}

async function main(): Promise<void> {
  const server = createServer(model);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-host-bench-'));
  const modulePath = path.join(dir, 'echo-tools.mjs');
  writeFileSync(modulePath, MODULE);
  const parameters = { type: 'object', properties: { n: { type: 'integer' } } } as const;
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = 0;
  let allHeld: () => void = () => {};
  const everyJobHeld = new Promise<void>((resolve) => (allHeld = resolve));
  const hostEcho = tool({ name: 'host_echo', description: 'Echoes.', parameters, run: ({ n }: { n: number }) => String(n) });
  const hostHold = tool({
    name: 'host_hold',
    description: 'Waits for the probe.',
    parameters,
    run: async () => {
      if (++held === JOBS) allHeld();
      await released;
      return 'released';
    },
  });
  const config = parseConfig({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    apiKey: 'bench',
    stream: false,
    maxRetries: 0,
    workspaceRoot: dir,
    tools: ['host_echo', 'host_hold', 'module_echo'],
    toolModules: [modulePath],
    toolLimits: { toolTimeoutMs: 600_000 },
    background: { isolation: 'shared', maxConcurrent: JOBS + 1, timeoutMinutes: 30, maxAlertsPerJob: 0, budget: { maxTurns: PROBE_CALLS + BURST_CALLS + 5 } },
  });
  const manager = new BackgroundManager({ config, tools: [hostEcho, hostHold] });
  const started = new Map<string, number>();
  const times: Record<'host_echo' | 'module_echo', number[]> = { host_echo: [], module_echo: [] };
  let probeId = '';
  manager.on('progress', ({ jobId, event }) => {
    if (jobId !== probeId) return;
    if (event.type === 'tool_call') started.set(event.callId, performance.now());
    if (event.type === 'tool_result' && (event.name === 'host_echo' || event.name === 'module_echo')) {
      const at = started.get(event.callId);
      if (at !== undefined) times[event.name].push(performance.now() - at);
    }
  });

  // 1. Latency, with JOBS jobs in flight.
  const heldIds = Array.from({ length: JOBS }, (_, i) => manager.spawn({ task: `hold (job ${i})`, label: `h${i}` }).id);
  await everyJobHeld;
  probeId = manager.spawn({ task: 'probe', label: 'probe' }).id;
  const probe = await manager.result(probeId);
  const bare = summary(await bareEcho(PROBE_CALLS / 2));
  const load = os.loadavg()[0] ?? NaN;
  release();
  const heldRecords = await Promise.all(heldIds.map((id) => manager.result(id)));

  // 2. Throughput: every job calls at once.
  const burstStart = performance.now();
  const burstIds = Array.from({ length: JOBS }, (_, i) => manager.spawn({ task: `burst (job ${i})`, label: `b${i}` }).id);
  const burstRecords = await Promise.all(burstIds.map((id) => manager.result(id)));
  const burstMs = performance.now() - burstStart;
  await manager.close();
  server.close();
  rmSync(dir, { recursive: true, force: true });

  const host = summary(times.host_echo);
  const direct = summary(times.module_echo);
  const result = {
    jobsInFlight: JOBS,
    isolation: 'shared',
    loadAverage1m: load,
    probeOk: probe.status === 'ok',
    heldOk: heldRecords.filter((r) => r.status === 'ok').length,
    host,
    direct,
    bareEcho: bare,
    addedMs: { p50: host.p50 - direct.p50, p90: host.p90 - direct.p90, p99: host.p99 - direct.p99 },
    throughput: {
      jobs: JOBS,
      callsPerJob: BURST_CALLS,
      ok: burstRecords.filter((r) => r.status === 'ok').length,
      wallMs: burstMs,
      hostCallsPerSecond: (JOBS * BURST_CALLS * 1000) / burstMs,
    },
  };
  if (values.json) return void process.stdout.write(`${JSON.stringify(result)}\n`);
  const ms = (n: number) => `${n.toFixed(3)} ms`;
  const row = (label: string, s: typeof host) => `${label} p50 ${ms(s.p50)}  p90 ${ms(s.p90)}  p99 ${ms(s.p99)}  (${s.calls})`;
  process.stdout.write(
    [
      `${JOBS} jobs held in flight (shared isolation, ${result.heldOk} ended ok); load average ${load.toFixed(2)}; probe ${result.probeOk ? 'ok' : probe.status}`,
      row('host tool      ', host),
      row('direct call    ', direct),
      row('bare echo floor', bare),
      `added by a host tool: p50 ${ms(result.addedMs.p50)}  p90 ${ms(result.addedMs.p90)}  p99 ${ms(result.addedMs.p99)}; ratio at p50 ${(host.p50 / direct.p50).toFixed(1)}x`,
      `throughput (not a round trip): ${JOBS} jobs x ${BURST_CALLS} host calls at once, ${result.throughput.ok} ok in ${Math.round(burstMs)} ms: ${Math.round(result.throughput.hostCallsPerSecond)} host calls/s`,
    ].join('\n') + '\n',
  );
}

await main();
