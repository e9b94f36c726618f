import type { ServerState } from './server-state.js';
import { JOB_DURATION_BUCKETS } from './job-durations.js';
import { usageCostUsd } from '../shared/models.js';

/** Label values in Prometheus text: backslash, quote and newline escaped. */
function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/**
 * The Prometheus text exposition (version 0.0.4) of the server: jobs by state and by ending,
 * queue depth, threads, tokens and cost by role and model, event-loop delay, SSE clients. Cost
 * comes from the config's price table (`models`); a model without a price is absent from the
 * cost metric (its tokens are still counted).
 */
export function renderMetrics(state: ServerState): string {
  const lines: string[] = [];
  const sample = (name: string, labels: Record<string, string>, value: number) => {
    const text = Object.entries(labels)
      .map(([k, v]) => `${k}="${label(v)}"`)
      .join(',');
    lines.push(`${name}${text ? `{${text}}` : ''} ${Number.isFinite(value) ? value : 0}`);
  };
  const header = (name: string, type: 'gauge' | 'counter' | 'summary' | 'histogram', help: string) =>
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  const metric = (name: string, type: 'gauge' | 'counter', help: string, samples: Array<[labels: Record<string, string>, value: number]>) => {
    header(name, type, help);
    for (const [labels, value] of samples) sample(name, labels, value);
  };
  const managers = [state.manager, ...[...state.sessions.values()].map((s) => s.manager)];
  const count = (s: 'queued' | 'running' | 'ended') => managers.reduce((n, m) => n + m.count(s), 0);
  metric(
    'forkpool_jobs',
    'gauge',
    'Jobs the server holds, by state.',
    (['queued', 'running', 'ended'] as const).map((s) => [{ state: s }, count(s)]),
  );
  metric(
    'forkpool_jobs_ended_total',
    'counter',
    'Jobs ended since start, by status.',
    [...state.endedByStatus].map(([status, n]) => [{ status }, n]),
  );
  metric('forkpool_queue_depth', 'gauge', 'Jobs waiting for a slot.', [[{}, count('queued')]]);
  metric('forkpool_threads', 'gauge', 'Worker threads alive.', [[{ executor: state.executor.kind }, state.executor.threadCount()]]);
  metric('forkpool_sessions', 'gauge', 'Parent-agent sessions open.', [[{}, state.sessions.size]]);
  const usage = [...state.usage.values()];
  metric(
    'forkpool_tokens_total',
    'counter',
    'Model tokens of ended jobs, by role, model and kind.',
    usage.flatMap(({ role, model, usage: u }) => [
      [{ role, model, kind: 'prompt' }, u.promptTokens],
      [{ role, model, kind: 'completion' }, u.completionTokens],
    ]),
  );
  metric(
    'forkpool_model_requests_total',
    'counter',
    'Model requests of ended jobs, by role and model.',
    usage.map(({ role, model, usage: u }) => [{ role, model }, u.requests]),
  );
  metric(
    'forkpool_cost_usd_total',
    'counter',
    'US dollars of ended jobs, by role and model, from the price table (models); unpriced models are absent.',
    usage.flatMap(({ role, model, usage: u }) => {
      const usd = usageCostUsd(state.config, model, u);
      return usd === undefined ? [] : [[{ role, model }, usd] as [Record<string, string>, number]];
    }),
  );
  const pool = state.manager.budgetPool();
  if (pool?.remainingUsd !== undefined)
    metric('forkpool_session_budget_remaining_usd', 'gauge', "Dollars left in the server manager's sessionBudget pool.", [[{}, pool.remainingUsd]]);
  if (pool?.remainingTokens !== undefined)
    metric('forkpool_session_budget_remaining_tokens', 'gauge', "Tokens left in the server manager's sessionBudget pool.", [[{}, pool.remainingTokens]]);
  // A summary (quantiles, sum, count), as the exposition format wants quantile labels to be.
  const delay = state.loopDelay;
  header('forkpool_event_loop_delay_seconds', 'summary', 'Main-thread event-loop delay since start (20 ms resolution).');
  sample('forkpool_event_loop_delay_seconds', { quantile: '0.5' }, delay.percentile(50) / 1e9);
  sample('forkpool_event_loop_delay_seconds', { quantile: '0.99' }, delay.percentile(99) / 1e9);
  sample('forkpool_event_loop_delay_seconds', { quantile: '1' }, delay.max / 1e9);
  sample('forkpool_event_loop_delay_seconds_sum', {}, (delay.mean * delay.count) / 1e9);
  sample('forkpool_event_loop_delay_seconds_count', {}, delay.count);
  header('forkpool_job_duration_seconds', 'histogram', 'How long ended jobs took, queued to ended, by status.');
  for (const [status, entry] of state.jobDurations.entries()) {
    JOB_DURATION_BUCKETS.forEach((le, i) => sample('forkpool_job_duration_seconds_bucket', { status, le: String(le) }, entry.buckets[i] ?? 0));
    sample('forkpool_job_duration_seconds_bucket', { status, le: '+Inf' }, entry.count);
    sample('forkpool_job_duration_seconds_sum', { status }, entry.sum);
    sample('forkpool_job_duration_seconds_count', { status }, entry.count);
  }
  metric('forkpool_sse_clients', 'gauge', 'Clients on /v1/events.', [[{}, state.hub.listenerCount]]);
  metric('forkpool_uptime_seconds', 'gauge', 'Seconds since the server started.', [[{}, (Date.now() - state.startedAt) / 1000]]);
  return state.scrub(`${lines.join('\n')}\n`);
}
