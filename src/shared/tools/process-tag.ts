import { readdir, readFile } from 'node:fs/promises';

/**
 * Every child process a job's tools start carries this variable (inherited by all its
 * descendants, `setsid` ones included). The main thread uses it to find and kill what a job
 * left when its thread died or was stopped before it could report a process group: the window
 * between a fork and its report is small, but a loaded machine widens it.
 */
export const PROCESS_TAG_VAR = 'FP_JOB_TAG';

/**
 * Pids of live processes whose environment holds `FP_JOB_TAG=<tag>` (Linux /proc; none
 * elsewhere). Asynchronous: it runs on the main thread at a job's end and must not block it.
 */
export async function processesTagged(tag: string): Promise<number[]> {
  const needle = `${PROCESS_TAG_VAR}=${tag}\0`;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const pids = entries.filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid);
  const found = await Promise.all(
    pids.map(async (entry) => {
      try {
        return (await readFile(`/proc/${entry}/environ`, 'latin1')).includes(needle) ? Number(entry) : undefined;
      } catch {
        return undefined; // Gone meanwhile, or not ours to read.
      }
    }),
  );
  return found.filter((pid): pid is number => pid !== undefined);
}

/** SIGKILLs every process tagged `tag`; resolves with how many were signalled. Never rejects. */
export async function killTagged(tag: string): Promise<number> {
  let killed = 0;
  for (const pid of await processesTagged(tag).catch(() => [])) {
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // ESRCH: it ended meanwhile.
    }
  }
  return killed;
}
