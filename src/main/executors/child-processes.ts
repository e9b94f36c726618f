import { killTagged } from '../../shared/tools/process-tag.js';

/**
 * The child processes of one attempt's job: the process groups its worker reports as they start
 * and end, killed at a hard stop and at the attempt's end, and the sweep for every process
 * still carrying the attempt's tag (a command forked just before its thread died may never have
 * been reported). The set of groups is made at the first one: most jobs start no process.
 */
export class ChildProcesses {
  #groups: Set<number> | undefined;
  /** The job started a child process at some point: its end sweeps for what is left. */
  #hadChildren = false;
  /** The attempt's process tag (JobSpec.processTag), once it launched. */
  tag: string | undefined;

  get hadChildren(): boolean {
    return this.#hadChildren;
  }

  /** The worker's `process` message. */
  note(state: 'started' | 'ended', pgid: number): void {
    if (state === 'started') {
      this.#hadChildren = true;
      (this.#groups ??= new Set()).add(pgid);
    } else this.#groups?.delete(pgid);
  }

  /** Kills every process group still registered. */
  killGroups(): void {
    if (!this.#groups) return;
    for (const pgid of this.#groups) {
      try {
        // The negative pid reaches the whole group: the command and everything it started.
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // ESRCH: the group is already gone.
      }
    }
    this.#groups = undefined;
  }

  /**
   * Every process still carrying the tag. Not for a remote job (`remote`): its processes are on
   * its worker's machine, whose own Attempt sweeps them, and a sweep reads every
   * /proc/<pid>/environ here (a BullMQ producer closing with 10,000 jobs out ran out of file
   * descriptors, then memory, sweeping for each).
   */
  sweep(remote: boolean): void {
    if (this.tag && !remote) void killTagged(this.tag);
  }
}
