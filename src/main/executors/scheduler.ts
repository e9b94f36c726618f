/** What a job timer is for; a manual scheduler (tests) can fire them selectively. */
export interface TimerTag {
  /** The job's id; for a wave's timer, `wave:<turn>`. */
  jobId: string;
  /**
   * `timeout` / `budget`: a run's one deadline, from its start: its timeout, or its wall-clock
   * budget (maxWallclockMinutes) when that comes first (only the earlier is armed: once either
   * stopped the job the other could add nothing); `wave-deadline`: a wave's join deadline;
   * `approval`: a call's approvalTimeoutMs; `sleep`: a sleeping job's wake (sleeps.ts).
   */
  kind: 'timeout' | 'cancel-grace' | 'port-close' | 'budget' | 'wave-deadline' | 'approval' | 'sleep';
}

/** Job timers (timeout, cancel grace, port-close fallback) and wave deadlines go through this, so tests can drive time. */
export interface JobScheduler {
  set(callback: () => void, ms: number, tag: TimerTag): unknown;
  clear(handle: unknown): void;
}

export const realScheduler: JobScheduler = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
