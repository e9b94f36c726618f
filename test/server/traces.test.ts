/**
 * `POST /v1/jobs` with a W3C `traceparent` header: the jobs' spans are children of the caller's
 * span (the request that caused them), in its trace. Real SDK, in-memory exporter.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup, waitFor } from '../helpers/cleanup.js';
import { startTestServer } from '../helpers/server.js';
import { useInMemoryTracer } from '../helpers/tracing.js';

const cleanup = useCleanup();
const exporter = useInMemoryTracer();

describe('POST /v1/jobs with a traceparent header', () => {
  it("the jobs' spans are children of the caller's span; a malformed header starts a trace of the job's own", async () => {
    const { api } = await startTestServer(cleanup);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const spanId = '00f067aa0ba902b7';
    const post = async (traceparent: string) => {
      const response = await api('/v1/jobs', { json: { task: 'Where is the retry backoff implemented?' }, headers: { traceparent } });
      expect(response.status).toBe(202);
      return ((await response.json()) as { jobs: Array<{ id: string }> }).jobs[0]?.id as string;
    };
    const traced = await post(`00-${traceId}-${spanId}-01`);
    const malformed = await post('00-not-a-trace-01');
    const spanOf = (id: string) => exporter.getFinishedSpans().find((s) => s.attributes['forkpool.job.id'] === id);
    const job = await waitFor(() => spanOf(traced), 'the traced job ended');
    expect(job.spanContext().traceId).toBe(traceId);
    expect(job.parentSpanContext?.spanId).toBe(spanId);
    const other = await waitFor(() => spanOf(malformed), 'the other job ended', { timeoutMs: 30_000 });
    expect(other.spanContext().traceId).not.toBe(traceId);
    expect(other.parentSpanContext).toBeUndefined();
  });
});
