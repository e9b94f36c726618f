/**
 * /metrics passes Prometheus's own linter, `promtool check metrics` (from Debian's prometheus
 * package): a summary for the event-loop delay (quantile labels belong to summaries), a
 * histogram of job durations, HELP and TYPE for every family, names by the conventions.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { runs, skipWithout } from '../helpers/system.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const TASK = 'Where is the retry backoff implemented?';

describe.skipIf(skipWithout('promtool (prometheus)', runs('promtool', ['--version']), 'apt-get install prometheus'))('/metrics under promtool', () => {
  it('passes promtool check metrics, with ended jobs, a session budget and SSE clients', async () => {
    const { api } = await startTestServer(cleanup, {
      models: { 'forkpool-sim': { inputUsdPerMTok: 1, outputUsdPerMTok: 2 } },
      sessionBudget: { maxCostUsd: 10 },
    });
    await api('/v1/jobs', { json: { tasks: [{ task: TASK }, { task: TASK, label: 'two' }] } });
    for (const id of ['bg-1', 'bg-2']) await api(`/v1/jobs/${id}/result?wait=60`);
    const text = await (await api('/metrics')).text();
    expect(text).toContain('forkpool_job_duration_seconds_bucket{');
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect({ status: check.status, out: `${check.stdout}${check.stderr}`.trim() }, text).toEqual({ status: 0, out: '' });
  }, 60_000);
});
