/** Upper bounds (seconds) of the job-duration histogram of /metrics; +Inf is added. */
export const JOB_DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600] as const;

/** Cumulative buckets, sum and count per status: a Prometheus histogram of how long jobs took, queued to ended. */
export class JobDurations {
  readonly #byStatus = new Map<string, { buckets: number[]; sum: number; count: number }>();

  observe(status: string, seconds: number): void {
    const entry = this.#byStatus.get(status) ?? { buckets: JOB_DURATION_BUCKETS.map(() => 0), sum: 0, count: 0 };
    JOB_DURATION_BUCKETS.forEach((le, i) => {
      if (seconds <= le) entry.buckets[i] = (entry.buckets[i] ?? 0) + 1;
    });
    entry.sum += seconds;
    entry.count++;
    this.#byStatus.set(status, entry);
  }

  entries(): ReadonlyArray<[status: string, entry: { buckets: readonly number[]; sum: number; count: number }]> {
    return [...this.#byStatus];
  }
}
