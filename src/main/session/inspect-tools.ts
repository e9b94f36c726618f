import { z } from 'zod';
import { ToolError } from '../../shared/errors.js';
import { capHeadTail } from '../../shared/text-budget.js';
import type { ToolDefinition } from '../../shared/tools/types.js';
import { totalUsage } from '../../shared/usage.js';
import { describeBudget } from '../../shared/budget.js';
import { describePool } from '../limits/budget-pool.js';
import { asToolError } from './background-tools.js';
import type { JobActivity } from './job-activity.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { BackgroundManager } from '../jobs/manager.js';
import type { Deliveries } from '../delivery/deliveries.js';

/** What the list, check and restart tools read: the ledger (through the manager) and activity. */
export interface InspectToolHost {
  manager: Pick<BackgroundManager, 'jobs' | 'find' | 'restart' | 'budgetOf' | 'budgetPool'>;
  deliveries: Pick<Deliveries, 'markDelivered'>;
  activity: JobActivity;
  /** The parent turn running now: a result read by check is delivered in it. */
  currentTurn(): number;
  cooldownMs: number;
  resultMaxChars: number;
  now?: () => number;
}

const jobRef = z.strictObject({
  job_id: z.string().trim().min(1).max(100),
});

/** core-agent's list and check, and Remy's restart, for the parent's model. */
export function inspectTools(host: InspectToolHost): ToolDefinition[] {
  const now = host.now ?? Date.now;
  const list: ToolDefinition<Record<string, never>> = {
    name: 'list_background_agents',
    description: "List this session's background jobs: state, delivery, usage, budget. Not in a loop.",
    parameters: z.strictObject({}),
    gated: false,
    async run() {
      const jobs = host.manager.jobs();
      const pool = host.manager.budgetPool();
      const poolLine = pool ? [`${describePool(pool)[0]?.toUpperCase()}${describePool(pool).slice(1)}.`] : [];
      if (jobs.length === 0) return [...poolLine, 'No background jobs in this session.'].join('\n');
      const counts = { queued: 0, running: 0, ended: 0 };
      for (const job of jobs) counts[job.state]++;
      const lines = jobs.map((job) => {
        const budget = host.manager.budgetOf(job.id);
        return `${listLine(job, host.activity, now())}${budget ? `; budget: ${describeBudget(budget)}` : ''}`;
      });
      return [...poolLine, `${jobs.length} background job(s): ${counts.running} running, ${counts.queued} queued, ${counts.ended} ended.`, ...lines].join('\n');
    },
  };
  const check: ToolDefinition<z.output<typeof jobRef>> = {
    name: 'check_background_agent',
    description: 'One background job in detail, with its result if ended (then not delivered again). Do not poll.',
    parameters: jobRef,
    gated: false,
    async run(args) {
      const job = host.manager.find(args.job_id);
      if (!job)
        throw new ToolError(
          'JOB_UNKNOWN',
          'check_background_agent',
          `no background job with id or name "${args.job_id}"; list_background_agents shows them all`,
        );
      const booked = host.activity.check(job.id, host.cooldownMs);
      if (booked.refusedSince !== undefined) {
        const ago = ((now() - booked.refusedSince) / 1000).toFixed(1);
        throw new ToolError(
          'CHECKED_RECENTLY',
          'check_background_agent',
          `job ${job.id} was checked ${ago} s ago and nothing changed since. Do not poll: you will be told when it ends. Do other work meanwhile.`,
        );
      }
      let record: Readonly<JobRecord> = job;
      if (job.state === 'ended' && job.deliveredInTurn === undefined) record = host.deliveries.markDelivered(job.id, host.currentTurn()) ?? job;
      const budget = host.manager.budgetOf(job.id);
      const text = checkText(record, host.activity, host.resultMaxChars, now(), job.deliveredInTurn === undefined);
      if (!budget) return text;
      // After the usage line: limits, spent and what ran out.
      const [head, ...rest] = text.split('\n');
      return [head, `Budget: ${describeBudget(budget)}.`, ...rest].join('\n');
    },
  };
  const restart: ToolDefinition<z.output<typeof jobRef>> = {
    name: 'restart_background_agent',
    description: 'Run a background job again from the start, same task and id (an undelivered result is dropped).',
    parameters: jobRef,
    gated: false,
    async run(args) {
      try {
        const handle = host.manager.restart(args.job_id);
        return `Job ${handle.id} ("${handle.label}") ${handle.state === 'running' ? 'is being stopped and will start over' : 'is queued to run again'}. You will be told when it ends.`;
      } catch (error) {
        throw asToolError(error, 'restart_background_agent');
      }
    },
  };
  return [list, check, restart];
}

function listLine(job: Readonly<JobRecord>, activity: JobActivity, now: number): string {
  const who = [job.name ? `name "${job.name}"` : `"${job.label}"`, job.agent ? `agent ${job.agent}` : 'fork'].join(', ');
  const state = job.state === 'ended' ? `ended ${job.status ?? ''}`.trim() : `${job.state}${job.speculative === 'pending' ? ' (speculative)' : ''}`;
  const unread = job.resultUnread
    ? ` (${job.resultUnread[1] - job.resultUnread[0]} characters not yet read: read_background_result offset ${job.resultUnread[0]})`
    : '';
  const delivery =
    job.state !== 'ended'
      ? ''
      : job.speculative === 'dropped'
        ? ' (speculative: not needed, never delivered)'
        : job.deliveredInTurn === undefined
          ? ', result not yet delivered'
          : `, delivered in turn ${job.deliveredInTurn}${unread}`;
  const since = job.startedAt ?? job.queuedAt;
  const elapsed = `${(((job.endedAt ?? now) - since) / 1000).toFixed(1)} s`;
  const tokens = totalUsage(job.usage).totalTokens;
  const view = activity.get(job.id);
  const lastCall = view?.toolCalls.at(-1);
  const last = lastCall ? `, last: ${lastCall.name} ${((now - lastCall.at) / 1000).toFixed(1)} s ago` : '';
  return `- ${job.id} (${who}): ${state}${delivery}, ${elapsed}, ${tokens} tokens${last}`;
}

function checkText(job: Readonly<JobRecord>, activity: JobActivity, maxChars: number, now: number, deliveredNow: boolean): string {
  const view = activity.get(job.id);
  const lines = [
    `Job ${job.id} "${job.label}"${job.name ? ` (name "${job.name}")` : ''}, agent ${job.agent ?? 'fork of you'}: ${job.state}${job.status ? ` (${job.status})` : ''}.`,
  ];
  const since = job.startedAt ?? job.queuedAt;
  lines.push(
    `Elapsed ${(((job.endedAt ?? now) - since) / 1000).toFixed(1)} s, ${job.iterations} model calls, ${totalUsage(job.usage).totalTokens} tokens, attempt ${Math.max(1, job.attempts)}.`,
  );
  if (job.tools) lines.push(`Tools offered: ${job.tools.join(', ') || 'none'}.`);
  if (view && view.toolCalls.length > 0) lines.push(`Last tool calls: ${view.toolCalls.map((c) => `${c.name}(${c.args.slice(0, 80)})`).join('; ')}`);
  if (view?.text && job.state !== 'ended') lines.push(`Said so far: ${capHeadTail(view.text, 800)}`);
  if (view && view.alerts.length > 0) lines.push(`Alerts: ${view.alerts.map((a) => `[${a.severity}] ${a.message}`).join(' | ')}`);
  if (job.state === 'ended') {
    if (job.error && job.status !== 'ok') lines.push(`Error: ${job.error.message.slice(0, 300)}`);
    const delivery =
      job.speculative === 'dropped'
        ? 'a speculative job dropped as not needed; it is never injected'
        : deliveredNow
          ? `now delivered in turn ${job.deliveredInTurn ?? '?'}; it will not be injected again`
          : `already delivered in turn ${job.deliveredInTurn}`;
    lines.push(`Result (${delivery}):`);
    const text = job.resultText ?? (job.resultDropped ? '(dropped from memory long after delivery)' : '');
    lines.push(
      ...capHeadTail(text.trim() || '(no text)', maxChars)
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .split('\n')
        .map((l) => `| ${l}`),
    );
  } else {
    lines.push('It has not ended; you will be told when it does.');
  }
  return lines.join('\n');
}
