import { readdir, readFile } from 'node:fs/promises';

/**
 * Every child process a job's tools start carries this variable (inherited by all its
 * descendants, `setsid` ones included). The main thread uses it to find and kill what a job
 * left when its thread died or was stopped before it could report a process group: the window
 * between a fork and its report is small, but a loaded machine widens it.
 */
export const PROCESS_TAG_VAR = 'FP_JOB_TAG';

/**
 * Reads of `/proc/<pid>/environ` in flight at once. A shared thread that dies takes thousands
 * of jobs with it, and a sweep per job, each reading every process's environment at once, ran
 * the host out of descriptors (EMFILE) and memory.
 */
const READS_AT_ONCE = 64;

/** Tags asked for since the running sweep began, each with the callers waiting on it. */
let wanted = new Map<string, Array<(killed: number) => void>>();
let sweeping = false;

/**
 * SIGKILLs every process tagged `tag`; resolves with how many were signalled. Never rejects.
 * The tags asked for in one burst share one pass over /proc (Linux; none elsewhere), so the
 * cost is one read per process whatever the number of jobs that ended.
 */
export function killTagged(tag: string): Promise<number> {
  return new Promise((resolve) => {
    const callers = wanted.get(tag);
    if (callers) callers.push(resolve);
    else wanted.set(tag, [resolve]);
    if (!sweeping) {
      sweeping = true;
      void sweepWhileWanted();
    }
  });
}

async function sweepWhileWanted(): Promise<void> {
  // A turn for the rest of a burst (the jobs of a thread that died end together) to join.
  await new Promise((resolve) => setImmediate(resolve));
  while (wanted.size > 0) {
    const batch = wanted;
    wanted = new Map();
    const killed = await killAllTagged(new Set(batch.keys())).catch(() => new Map<string, number>());
    for (const [tag, callers] of batch) for (const resolve of callers) resolve(killed.get(tag) ?? 0);
  }
  sweeping = false;
}

/** One pass over /proc: kills each process whose tag is in `tags`; how many per tag. */
async function killAllTagged(tags: ReadonlySet<string>): Promise<Map<string, number>> {
  const killed = new Map<string, number>();
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return killed;
  }
  const pids = entries.filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid);
  for (let i = 0; i < pids.length; i += READS_AT_ONCE) {
    await Promise.all(
      pids.slice(i, i + READS_AT_ONCE).map(async (pid) => {
        const tag = tagOf(await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => ''));
        if (tag === undefined || !tags.has(tag)) return;
        try {
          process.kill(Number(pid), 'SIGKILL');
          killed.set(tag, (killed.get(tag) ?? 0) + 1);
        } catch {
          // ESRCH: it ended meanwhile.
        }
      }),
    );
  }
  return killed;
}

/** The value of FP_JOB_TAG in a NUL-separated environment, if it has one. */
function tagOf(environ: string): string | undefined {
  const prefix = `${PROCESS_TAG_VAR}=`;
  const at = environ.startsWith(prefix) ? 0 : environ.indexOf(`\0${prefix}`) + 1;
  if (at === 0 && !environ.startsWith(prefix)) return undefined;
  const end = environ.indexOf('\0', at + prefix.length);
  return environ.slice(at + prefix.length, end < 0 ? undefined : end);
}
