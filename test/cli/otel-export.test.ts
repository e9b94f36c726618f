/**
 * `forkpool run` with OTEL_EXPORTER_OTLP_ENDPOINT set exports its spans over OTLP/HTTP to a
 * loopback receiver this test starts: JSON and protobuf, the service name, and a flush at exit,
 * SIGTERM included (the batch processor would otherwise hold them for seconds and lose them).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { describeResult, parseJsonLines, requireBuiltCli, runCli, spawnCli, tempWorkspace, useCleanup, type Cleanup } from '../helpers/index.js';

const cleanup = useCleanup();
requireBuiltCli();

const TWO_QUESTIONS = 'Answer these:\n1. Where is the tool loop implemented?\n2. How are API keys redacted?';

interface Export {
  path: string;
  contentType: string;
  body: Buffer;
}

/** An OTLP/HTTP receiver on loopback: keeps every request, answers 200. */
async function startReceiver(cleanups: Cleanup): Promise<{ url: string; exports: Export[] }> {
  const exports: Export[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      exports.push({ path: req.url ?? '', contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      const json = String(req.headers['content-type']).includes('json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.add(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exports };
}

interface JsonSpan {
  name: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

/** Every span of the JSON exports, with the service names they came under. */
function jsonSpans(exports: readonly Export[]): { spans: JsonSpan[]; services: string[] } {
  const spans: JsonSpan[] = [];
  const services: string[] = [];
  for (const e of exports) {
    const body = JSON.parse(e.body.toString('utf8')) as {
      resourceSpans: Array<{ resource: { attributes: JsonSpan['attributes'] }; scopeSpans: Array<{ spans: JsonSpan[] }> }>;
    };
    for (const rs of body.resourceSpans) {
      services.push(String(rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue));
      for (const ss of rs.scopeSpans) spans.push(...ss.spans);
    }
  }
  return { spans, services };
}

const attr = (span: JsonSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
};

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
