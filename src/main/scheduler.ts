/** What a job timer is for; a manual scheduler (tests) can fire them selectively. */
export interface TimerTag {
  jobId: string;
  kind: 'timeout' | 'cancel-grace' | 'port-close';
}

/** Job timers (timeout, cancel grace, port-close fallback) go through this, so tests can drive time. */
export interface JobScheduler {
  set(callback: () => void, ms: number, tag: TimerTag): unknown;
  clear(handle: unknown): void;
}

export const realScheduler: JobScheduler = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Resolves true if `promise` settles within `ms`, false otherwise; the timer is always cleared. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
