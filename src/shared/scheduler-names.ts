// The scheduler names alone, with no imports: config.ts checks `background.scheduler` against them
// without reaching scheduler.ts (whose tool types lead back to the config: an import circle).

/**
 * core-agent's between-turn schedulers (`Spec.Scheduler`). `default` is the config's
 * `background.scheduler`; `sleep` and `exit_on_defer` give the job a `schedule_next_turn` tool;
 * `none` gives it none. Resolved once at admission, so a job's spec names `sleep`,
 * `exit_on_defer` or nothing.
 */
export const SCHEDULERS = ['default', 'sleep', 'exit_on_defer', 'none'] as const;
export type SchedulerName = (typeof SCHEDULERS)[number];
/** What a job's spec carries: the scheduler that gives it the tool. */
export const ACTIVE_SCHEDULERS = ['sleep', 'exit_on_defer'] as const;
export type ActiveScheduler = (typeof ACTIVE_SCHEDULERS)[number];

/** True when `name` is one of {@link SCHEDULERS}. */
export function isSchedulerName(name: unknown): name is SchedulerName {
  return typeof name === 'string' && (SCHEDULERS as readonly string[]).includes(name);
}
