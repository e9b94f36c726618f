import { z } from 'zod';
import type { ForkpoolConfig } from '../../shared/config.js';
import { WAIT_LIMITS } from '../../shared/fixed-limits.js';
import { AbortError, ToolError } from '../../shared/errors.js';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { Deliveries } from '../delivery/deliveries.js';
import { deliverWaited } from '../delivery/waited-results.js';
import type { BackgroundManager, ParentControls } from '../jobs/manager.js';
import { WAIT_MODES } from '../jobs/waits.js';
import type { JobRecord } from '../ledger/ledger.js';
import { asToolError } from './background-tools.js';

const TOOL = 'wait_background_agents';

/** What the wait tool needs: the manager's jobs, its controls' wait, the delivery side, the config and the turn. */
export interface WaitToolHost {
  manager: Pick<BackgroundManager, 'find' | 'jobs'>;
  controls: Pick<ParentControls, 'wait'>;
  deliveries: Pick<Deliveries, 'drain'>;
  config: ForkpoolConfig;
  /** The turn the results are delivered in. */
  currentTurn(): number;
}

/** The longest `timeout_ms`: below the tool loop's own timeout, so the wait answers before the call fails. */
export function waitToolMaxMs(config: Pick<ForkpoolConfig, 'toolLimits'>): number {
  return Math.min(WAIT_LIMITS.maxTimeoutMs, Math.max(0, config.toolLimits.toolTimeoutMs - WAIT_LIMITS.toolMarginMs));
}

function waitArgs(maxMs: number) {
  return z.strictObject({
    jobs: z.array(z.string().trim().min(1).max(100)).min(1).max(100).optional().describe('Ids or names. Default: all undelivered.'),
    timeout_ms: z
      .number()
      .int()
      .min(0)
      .max(
        maxMs,
        `timeout_ms must be at most ${maxMs} (the tool timeout, toolLimits.toolTimeoutMs, less ${WAIT_LIMITS.toolMarginMs} ms); wait again for longer`,
      )
      .describe(`At most ${maxMs}; 0 just looks.`),
    mode: z.enum(WAIT_MODES).optional().describe('Default "all".'),
  });
}

/**
 * `wait_background_agents(jobs?, timeout_ms, mode)` (Codex's `wait`): blocks this call until the
 * jobs end (all, or the first) or the timeout passes, and returns the results that ended, which
 * counts as their delivery: no later `<background_results>` block or follow-up carries them
 * again (src/main/delivery/waited-results.ts). An unknown job, or one that is not the parent's
 * own (a job's child), is a tool error naming it, and nothing waits. Aborting the turn ends the wait.
 */
export function waitTool(host: WaitToolHost): ToolDefinition<z.output<ReturnType<typeof waitArgs>>> {
  const maxMs = waitToolMaxMs(host.config);
  return {
    name: TOOL,
    description: 'Wait for background jobs and get their results now, only when you cannot go on without them (else end your turn: they are delivered).',
    parameters: waitArgs(maxMs),
    gated: false,
    async run(args, ctx) {
      const ids = args.jobs ? ownJobs(host, args.jobs) : pendingJobs(host);
      if (ids.length === 0) return 'No background agents to wait for: none of yours is running, and every result has been delivered.';
      const mode = args.mode ?? 'all';
      let waited;
      try {
        waited = await host.controls.wait(ids, { timeoutMs: args.timeout_ms, mode, signal: ctx.signal });
      } catch (error) {
        if (error instanceof AbortError) throw error;
        throw asToolError(error, TOOL);
      }
      return (await deliverWaited(waited, mode, host.currentTurn(), host.deliveries, host.config)).text;
    },
  };
}

/** The ids named, each a job of the parent's own; else a tool error naming every one that is not. */
function ownJobs(host: WaitToolHost, names: readonly string[]): string[] {
  const unknown: string[] = [];
  const notOwn: Array<Readonly<JobRecord>> = [];
  const ids: string[] = [];
  for (const name of names) {
    const job = host.manager.find(name);
    if (!job) unknown.push(name);
    else if (job.parentJobId !== undefined) notOwn.push(job);
    else ids.push(job.id);
  }
  const problems = [
    ...unknown.map((name) => `no background job with id or name "${name}"`),
    ...notOwn.map((job) => `job ${job.id} is not yours: job ${job.parentJobId} spawned it and gets its result`),
  ];
  if (problems.length > 0) throw new ToolError('JOB_UNKNOWN', TOOL, `${problems.join('; ')}. Nothing was waited for; list_background_agents shows your jobs.`);
  return ids;
}

/** The default: every job of the parent's own not yet delivered (still running, or ended and waiting for delivery). */
function pendingJobs(host: WaitToolHost): string[] {
  return host.manager
    .jobs()
    .filter((job) => job.parentJobId === undefined && (job.state !== 'ended' || job.deliveredInTurn === undefined))
    .map((job) => job.id);
}
