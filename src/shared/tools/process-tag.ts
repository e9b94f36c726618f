import { readdirSync, readFileSync } from 'node:fs';

/**
 * Every child process a job's tools start carries this variable (inherited by all its
 * descendants, `setsid` ones included). The main thread uses it to find and kill what a job
 * left when its thread died or was stopped before it could report a process group: the window
 * between a fork and its report is small, but a loaded machine widens it.
 */
export const PROCESS_TAG_VAR = 'FP_JOB_TAG';

/** Pids of live processes whose environment holds `FP_JOB_TAG=<tag>` (Linux /proc; none elsewhere). */
export function processesTagged(tag: string): number[] {
  const needle = `${PROCESS_TAG_VAR}=${tag}\0`;
  const found: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(needle)) found.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/** SIGKILLs every process tagged `tag`; returns how many were signalled. */
export function killTagged(tag: string): number {
  let killed = 0;
  for (const pid of processesTagged(tag)) {
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // ESRCH: it ended meanwhile.
    }
  }
  return killed;
}
