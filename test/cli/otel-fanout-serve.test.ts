/**
 * Traces from `forkpool fanout` and `forkpool serve` (POST /v1/jobs) with OTEL_EXPORTER_OTLP_ENDPOINT
 * set: every job's span reaches a loopback OTLP/HTTP receiver, flushed at exit (fanout) and at
 * SIGTERM (serve, its jobs stopped mid-run). `run` is covered by otel-export.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, jsonl, parseJsonLines, requireBuiltCli, runCli, spawnCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';
import { attr, jsonSpans, startReceiver } from '../helpers/otlp-receiver.js';

const cleanup = useCleanup();
requireBuiltCli();

const OTEL_JSON = (url: string) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'forkpool-test' });
const jobSpans = (spans: ReturnType<typeof jsonSpans>['spans']) =>
  spans.filter((s) => s.name.startsWith('invoke_agent') && attr(s, 'forkpool.job.id') !== undefined);

describe('traces from fanout and serve', () => {
  it('fanout: each job span, with its model calls under it, reaches the receiver before the process exits', async () => {
    const receiver = await startReceiver(cleanup);
    const cwd = tempWorkspace({ 'a.txt': 'alpha\n' }, cleanup);
    const tasks = [
      { task: 'find a.txt', label: 'one' },
      { task: 'find a.txt again', label: 'two' },
    ];
    const r = await runCli(['fanout', '--no-progress', '--sim-latency', '0', '-'], { cwd, input: jsonl(tasks), cleanup, env: OTEL_JSON(receiver.url) });
    expect(r.code, describeResult(r)).toBe(0);
    const ids = parseJsonLines(r.stdout).map((line) => line.id);
    expect(ids).toHaveLength(2);
    const { spans, services } = jsonSpans(receiver.exports);
    expect(new Set(services)).toEqual(new Set(['forkpool-test']));
    const jobs = jobSpans(spans);
    expect(new Set(jobs.map((s) => attr(s, 'forkpool.job.id')))).toEqual(new Set(ids));
    for (const job of jobs) {
      expect(attr(job, 'forkpool.job.status')).toBe('ok');
      expect(spans.some((s) => s.parentSpanId === job.spanId && s.name.startsWith('chat '))).toBe(true);
    }
  });

  it('serve: the spans of jobs POSTed to /v1/jobs are exported at SIGTERM, the jobs stopped mid-run (exit 143)', async () => {
    const receiver = await startReceiver(cleanup);
    const token = 'otel-serve-token';
    const ws = tempWorkspace({ 'src/a.ts': 'export const retryBackoff = 1;\n' }, cleanup);
    // Slow model calls: both jobs are still running when the signal comes.
    const cli = spawnCli(['serve', '--port', '0', '--json', '--sim-latency', '3000', '--workspace', ws], {
      cleanup,
      env: { ...OTEL_JSON(receiver.url), FORKPOOL_SERVER_TOKEN: token },
    });
    const out = await cli.waitForStdout((s) => s.includes('"type":"listening"'));
    const listening = parseJsonLines(out).find((e) => e.type === 'listening') as { url: string };
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const tasks = [
      { task: 'Where is the retry backoff implemented?', label: 's1' },
      { task: 'Where is retryBackoff used?', label: 's2' },
    ];
    const posted = await fetch(`${listening.url}/v1/jobs`, { method: 'POST', headers, body: JSON.stringify({ tasks }) });
    expect(posted.status).toBe(202);
    for (;;) {
      const metrics = await (await fetch(`${listening.url}/metrics`, { headers })).text();
      if (metrics.includes('forkpool_jobs{state="running"} 2')) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    cli.child.kill('SIGTERM');
    const r = await cli.exited;
    expect(r.code, describeResult(r)).toBe(143);
    const jobs = jobSpans(jsonSpans(receiver.exports).spans);
    expect(jobs.map((s) => attr(s, 'forkpool.job.label')).sort()).toEqual(['s1', 's2']);
    for (const job of jobs) expect(attr(job, 'forkpool.job.status')).not.toBe('ok');
  });
});
