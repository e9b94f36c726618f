/**
 * `forkpool run` with OTEL_EXPORTER_OTLP_ENDPOINT set exports its spans over OTLP/HTTP to a
 * loopback receiver this test starts: JSON and protobuf, the service name, and a flush at exit,
 * SIGTERM included (the batch processor would otherwise hold them for seconds and lose them).
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, parseJsonLines, requireBuiltCli, runCli, spawnCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';
import { attr, jsonSpans, startReceiver } from '../helpers/otlp-receiver.js';

const cleanup = useCleanup();
requireBuiltCli();

const TWO_QUESTIONS = 'Answer these:\n1. Where is the tool loop implemented?\n2. How are API keys redacted?';

describe('forkpool run with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('http/json: the turn, its jobs and their model and tool calls reach the receiver before the process exits, under OTEL_SERVICE_NAME', async () => {
    const receiver = await startReceiver(cleanup);
    const r = await runCli(['run', '--json', '--sim-latency', '0', TWO_QUESTIONS], {
      cwd: tempWorkspace(undefined, cleanup),
      cleanup,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'research-cli' },
    });
    expect(r.code, describeResult(r)).toBe(0);
    expect(receiver.exports.length).toBeGreaterThan(0);
    for (const e of receiver.exports) {
      expect(e.path).toBe('/v1/traces');
      expect(e.contentType).toContain('application/json');
    }
    const { spans, services } = jsonSpans(receiver.exports);
    expect(new Set(services)).toEqual(new Set(['research-cli']));
    const jobIds = parseJsonLines(r.stdout)
      .filter((e) => e.type === 'job_done')
      .map((e) => e.id);
    expect(jobIds).toHaveLength(2);
    const turns = spans.filter((s) => s.name === 'invoke_agent primary');
    expect(turns.length).toBeGreaterThanOrEqual(1);
    for (const id of jobIds) {
      const job = spans.find((s) => attr(s, 'forkpool.job.id') === id);
      expect(job, `the span of job ${String(id)}`).toBeDefined();
      const call = spans.find((s) => s.spanId === job?.parentSpanId);
      expect(call?.name).toBe('execute_tool spawn_background_agent');
      expect(spans.some((s) => s.parentSpanId === job?.spanId && s.name.startsWith('chat '))).toBe(true);
    }
  });

  it('http/protobuf (the default protocol): the spans arrive as protobuf', async () => {
    const receiver = await startReceiver(cleanup);
    const r = await runCli(['run', '--sim-latency', '0', TWO_QUESTIONS], {
      cwd: tempWorkspace(undefined, cleanup),
      cleanup,
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, OTEL_SERVICE_NAME: 'proto-cli' },
    });
    expect(r.code, describeResult(r)).toBe(0);
    expect(receiver.exports.length).toBeGreaterThan(0);
    expect(receiver.exports.every((e) => e.contentType.includes('application/x-protobuf'))).toBe(true);
    // Protobuf keeps strings as they are: the names and attribute keys are in the bytes.
    const bytes = Buffer.concat(receiver.exports.map((e) => e.body)).toString('latin1');
    for (const text of ['proto-cli', 'invoke_agent primary', 'execute_tool spawn_background_agent', 'forkpool.job.id', 'gen_ai.usage.input_tokens']) {
      expect(bytes).toContain(text);
    }
  });

  it('SIGTERM: the spans of the stopped turn and jobs are exported before the process exits (143)', async () => {
    const receiver = await startReceiver(cleanup);
    // Slow model calls: the jobs are still running when the signal comes.
    const cli = spawnCli(['run', '--json', '--sim-latency', '2000', TWO_QUESTIONS], {
      cwd: tempWorkspace(undefined, cleanup),
      cleanup,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
    });
    await cli.waitForStdout((out) => (out.match(/"type":"job_spawned"/g) ?? []).length >= 2);
    cli.child.kill('SIGTERM');
    const r = await cli.exited;
    expect(r.code, describeResult(r)).toBe(143);
    const { spans } = jsonSpans(receiver.exports);
    const jobs = spans.filter((s) => attr(s, 'forkpool.job.id') !== undefined && s.name.startsWith('invoke_agent'));
    expect(jobs).toHaveLength(2);
    for (const job of jobs) expect(attr(job, 'forkpool.job.status')).not.toBe('ok');
  });
});
