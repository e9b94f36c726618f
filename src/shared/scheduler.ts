import { z } from 'zod';
import { ForkpoolError, ToolError } from './errors.js';
import type { ToolDefinition } from './tools/types.js';
import { SCHEDULERS, isSchedulerName, type ActiveScheduler } from './scheduler-names.js';
export { SCHEDULERS, ACTIVE_SCHEDULERS, isSchedulerName, type SchedulerName, type ActiveScheduler } from './scheduler-names.js';

/** The longest a job may put its next turn off: 7 days. */
export const MAX_SCHEDULE_SECONDS = 7 * 24 * 3600;

/**
 * The scheduler a spawn runs with: its own (`default` or absent: the config's). Throws
 * SCHEDULER_UNKNOWN naming the value and the choices.
 */
export function resolveScheduler(requested: string | undefined, configDefault: string): ActiveScheduler | undefined {
  const name = requested === undefined || requested === 'default' ? configDefault : requested;
  if (!isSchedulerName(name) || name === 'default') {
    const where = requested === undefined || requested === 'default' ? 'background.scheduler' : 'scheduler';
    throw new ForkpoolError('SCHEDULER_UNKNOWN', `${where}: unknown scheduler ${JSON.stringify(name)}; expected one of ${SCHEDULERS.join(', ')}`);
  }
  return name === 'none' ? undefined : name;
}

/** `after` as seconds: a number of seconds, or "<n>s|m|h|d" (e.g. "90s", "5m", "2h"). Undefined when malformed. */
export function parseAfterSeconds(after: string | number): number | undefined {
  if (typeof after === 'number') return Number.isFinite(after) ? after : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$/i.exec(after);
  if (!match) return undefined;
  const unit = { s: 1, m: 60, h: 3600, d: 86_400 }[(match[2] ?? 's').toLowerCase() as 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}

const scheduleArgs = z.strictObject({
  after: z
    .union([z.number(), z.string().max(40)])
    .describe('How long until your next turn: seconds, or "90s", "5m", "2h", "1d" (at least 1 second, at most 7 days).'),
  reason: z.string().trim().min(1).max(500).describe('What you will do then, in one line (e.g. "scan the queue again").'),
});

/** A turn the job asked for: when (epoch ms) and why. */
export interface ScheduledTurn {
  at: number;
  reason: string;
}

export interface ScheduleToolHost {
  scheduler: ActiveScheduler;
  /**
   * The job keeps the latest request. `exit_on_defer`: it ends `deferred` after this turn.
   * `sleep`: its run stops after this batch of calls and the job sleeps (main thread, no slot,
   * no thread) until `at`, then goes on with {@link wakeMessage}.
   */
  onSchedule(turn: ScheduledTurn): void;
  now?: () => number;
}

/** What a job woken from its `sleep` reads as its next user message. */
export function wakeMessage(turn: ScheduledTurn, now = Date.now()): string {
  return `It is now ${new Date(now).toISOString()}: the turn you scheduled has come (${turn.reason}). Go on.`;
}

/**
 * `schedule_next_turn(after, reason)`. With `sleep` the job's attempt ends after this call (its
 * slot and thread go back), it sleeps until the time and then goes on with its conversation (a
 * supervisor that scans, sleeps, scans; docs/delivery.md "Schedulers"); with `exit_on_defer` it
 * records the time and the job ends `deferred` once it answers, for an orchestrator to run again.
 */
export function scheduleNextTurnTool(host: ScheduleToolHost): ToolDefinition<z.output<typeof scheduleArgs>> {
  const now = host.now ?? Date.now;
  const sleeping = host.scheduler === 'sleep';
  return {
    name: 'schedule_next_turn',
    description: sleeping
      ? 'Sleep until your next turn: you are woken with a message when the time has come, then go on (e.g. scan again). Use it between scans instead of finishing.'
      : 'Ask to be run again later: after this call, end your turn with a one-line status; you will be started again at that time by an orchestrator.',
    parameters: scheduleArgs,
    gated: false,
    async run(args) {
      const seconds = parseAfterSeconds(args.after);
      if (seconds === undefined || seconds < 1 || seconds > MAX_SCHEDULE_SECONDS) {
        throw new ToolError(
          'TOOL_ARGUMENTS_INVALID',
          'schedule_next_turn',
          `after: expected seconds or "<n>s|m|h|d" between 1 second and 7 days, received ${JSON.stringify(args.after)}`,
        );
      }
      const at = now() + Math.round(seconds * 1000);
      host.onSchedule({ at, reason: args.reason });
      if (sleeping) return `Sleeping until ${new Date(at).toISOString()} (${args.reason}); you will be woken with a message then.`;
      return `Your next turn is scheduled for ${new Date(at).toISOString()} (${args.reason}). End your turn now with a one-line status; do not call more tools.`;
    },
  };
}
