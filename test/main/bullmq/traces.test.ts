/**
 * A job on a BullMQ worker process continues the producer's trace: the job carries the
 * traceparent of its `invoke_agent` span in its data, and the worker's run span (exported by the
 * worker over OTLP/HTTP to a loopback receiver this test starts) is that span's child, with the
 * run's model and tool calls under it. The producer makes no loop spans of its own for a remote
 * job, so nothing is counted twice.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { RESEARCH_TASK, ended, skipWithoutRedis, startBullmqPair, useCleanup } from '../../helpers/index.js';
import { useInMemoryTracer } from '../../helpers/tracing.js';

const cleanup = useCleanup();
const exporter = useInMemoryTracer();

interface JsonSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

/** An OTLP/HTTP JSON receiver on loopback: every span it was sent. */
async function startReceiver(): Promise<{ url: string; spans: JsonSpan[] }> {
  const spans: JsonSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: JsonSpan[] }> }> };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.add(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans };
}

describe.skipIf(skipWithoutRedis())('traces across a BullMQ worker', { timeout: 180_000 }, () => {
  it("the worker's run is a child of the producer's job span, in the same trace, with the run's chat and tool spans under it", async () => {
    const receiver = await startReceiver();
    const { worker, manager } = await startBullmqPair(cleanup, {
      sim: { latencyMs: 20 },
      worker: { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'forkpool-worker' } },
      producer: { background: { maxConcurrent: 4 }, bullmq: { lockMs: 4_000 } },
    });
    const job = manager.spawn({ task: RESEARCH_TASK, label: 'remote' });
    const record = await ended(manager, job.id);
    expect(record.status).toBe('ok');
    // The worker exports what it holds when it closes (SIGTERM flushes).
    worker.cli.child.kill('SIGTERM');
    await worker.cli.exited;

    const producer = exporter.getFinishedSpans();
    const jobSpan = producer.find((s) => s.attributes['forkpool.job.id'] === job.id);
    expect(jobSpan?.name).toBe('invoke_agent fork');
    // Remote: the producer made the job's span only; the worker made its loop's.
    expect(producer.filter((s) => s.name.startsWith('chat ') || s.name.startsWith('execute_tool '))).toEqual([]);
    const run = receiver.spans.find((s) => s.name === 'forkpool.worker.run');
    expect(run, 'the worker exported its run span').toBeDefined();
    expect(run?.traceId).toBe(jobSpan?.spanContext().traceId);
    expect(run?.parentSpanId).toBe(jobSpan?.spanContext().spanId);
    expect(run?.attributes.find((a) => a.key === 'forkpool.job.id')?.value.stringValue).toBe(job.id);
    const under = receiver.spans.filter((s) => s.parentSpanId === run?.spanId);
    expect(under.some((s) => s.name.startsWith('chat '))).toBe(true);
    expect(under.some((s) => s.name.startsWith('execute_tool '))).toBe(true);
    for (const s of under) expect(s.traceId).toBe(run?.traceId);
  });
});
