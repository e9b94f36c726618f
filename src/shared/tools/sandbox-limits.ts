import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ToolLimits } from '../config.js';

/**
 * Resource limits of one bash command (issue 18): processes, memory, the size of any file it
 * writes, and (in bubblewrap) its /tmp. Two mechanisms, whichever this machine offers:
 *
 * - a cgroup of its own per command, when forkpool may make one (cgroup v2 with the `pids` and
 *   `memory` controllers delegated to forkpool's own cgroup, or cgroup v1's `pids` and `memory`
 *   hierarchies writable, as for root on most hosts): `pids.max`, `memory.max` /
 *   `memory.limit_in_bytes`, counted for every process of the command together;
 * - setrlimit in the shell that starts the command (hard and soft, so the command cannot raise
 *   them: it has no capabilities in bubblewrap): RLIMIT_FSIZE and RLIMIT_DATA per process, and
 *   RLIMIT_NPROC inside bubblewrap when not root (there it counts the sandbox's own user
 *   namespace; for uid 0 the kernel does not enforce it, and outside a namespace it would count
 *   every process of the user on the machine).
 */

export type LimitName = 'processes' | 'memory' | 'file size' | '/tmp size';

export const LIMIT_FIELD: Readonly<Record<LimitName, keyof ToolLimits>> = {
  processes: 'bashMaxProcesses',
  memory: 'bashMaxMemoryMb',
  'file size': 'bashMaxFileMb',
  '/tmp size': 'bashTmpMb',
};

type BashLimits = Pick<ToolLimits, 'bashMaxProcesses' | 'bashMaxMemoryMb' | 'bashMaxFileMb' | 'bashTmpMb'>;

/** Exit status of a process killed by SIGXFSZ, as bash reports it (128 + 25). */
const SIGXFSZ_STATUS = 153;

/**
 * The program that runs `command` under the limits: a bash that closes every descriptor but
 * 0–2 (one inherited from whatever started forkpool would otherwise reach past the sandbox),
 * sets the rlimits and then execs `/bin/bash -c command`, so the command parses as before.
 */
export function limitedBashArgv(command: string, limits: BashLimits, options: { nproc: boolean }): string[] {
  const ulimits = [
    `-f ${limits.bashMaxFileMb * 1024}`, // bash counts -f in 1024-byte blocks
    `-d ${limits.bashMaxMemoryMb * 1024}`, // and -d in KiB
    ...(options.nproc ? [`-u ${limits.bashMaxProcesses}`] : []),
  ];
  const script = [
    // The glob's own descriptor is closed by the time the loop runs; closing it again is silent.
    // No redirection on the loop: bash would park stderr on a high descriptor the loop then closes.
    'for fd in /proc/self/fd/*; do fd=${fd##*/}; if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done',
    `ulimit -H -S ${ulimits.join(' ')} || exit 125`,
    'exec /bin/bash -c "$1"',
  ].join('\n');
  return ['/bin/bash', '-c', script, 'bash', command];
}

/** A cgroup (one per hierarchy on v1) that one command's processes run in. */
export interface CommandCgroup {
  /** `cgroup.procs` files the launcher writes its own pid to before it execs the command. */
  procsFiles: string[];
  /** Which limits were reached while the command ran. */
  hits(): Promise<Set<LimitName>>;
  /** Kills what is left in it and removes it. Never rejects. */
  remove(): Promise<void>;
}

let sequence = 0;
const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * Makes a cgroup for one command with `pids` and `memory` limits, or resolves undefined when this
 * machine (or this user) offers none. Never rejects.
 */
export async function makeCommandCgroup(limits: BashLimits): Promise<CommandCgroup | undefined> {
  const memoryBytes = String(limits.bashMaxMemoryMb * 1024 * 1024);
  const name = `forkpool-${process.pid}-${++sequence}`;
  const own = await readFile('/proc/self/cgroup', 'utf8').catch(() => '');
  const v2 = /^0::(.*)$/m.exec(own)?.[1];
  if (v2 !== undefined) {
    const parent = path.join(CGROUP_ROOT, v2);
    const delegated = (await readFile(path.join(parent, 'cgroup.subtree_control'), 'utf8').catch(() => '')).split(/\s+/);
    if (delegated.includes('pids') && delegated.includes('memory')) {
      const dir = path.join(parent, name);
      const made = await createWith(dir, { 'pids.max': String(limits.bashMaxProcesses), 'memory.max': memoryBytes, 'memory.swap.max': '0' });
      if (made) return cgroupOf([dir], async () => eventsHits(dir, { 'pids.events': 'processes', 'memory.events': 'memory' }, /^(max|oom_kill) (\d+)$/m));
    }
  }
  const pidsPath = /^\d+:pids:(.*)$/m.exec(own)?.[1];
  const memoryPath = /^\d+:memory:(.*)$/m.exec(own)?.[1];
  if (pidsPath === undefined) return undefined;
  const pidsDir = path.join(CGROUP_ROOT, 'pids', pidsPath, name);
  if (!(await createWith(pidsDir, { 'pids.max': String(limits.bashMaxProcesses) }))) return undefined;
  const dirs = [pidsDir];
  if (memoryPath !== undefined) {
    const memoryDir = path.join(CGROUP_ROOT, 'memory', memoryPath, name);
    if (await createWith(memoryDir, { 'memory.limit_in_bytes': memoryBytes })) dirs.push(memoryDir);
  }
  return cgroupOf(dirs, async () => {
    const found = await eventsHits(pidsDir, { 'pids.events': 'processes' }, /^max (\d+)$/m);
    const memoryDir = dirs[1];
    if (memoryDir && Number((await readFile(path.join(memoryDir, 'memory.failcnt'), 'utf8').catch(() => '0')).trim()) > 0) found.add('memory');
    return found;
  });
}

/** Creates `dir` and writes its limit files; undefined (and nothing left behind) when it cannot. */
async function createWith(dir: string, files: Record<string, string>): Promise<boolean> {
  try {
    await mkdir(dir);
  } catch {
    return false;
  }
  try {
    for (const [file, value] of Object.entries(files)) {
      // memory.swap.max is missing without swap accounting; the others are the limit itself.
      await writeFile(path.join(dir, file), value).catch((error: unknown) => {
        if (file !== 'memory.swap.max') throw error;
      });
    }
    return true;
  } catch {
    await rmdir(dir).catch(() => {});
    return false;
  }
}

async function eventsHits(dir: string, files: Record<string, LimitName>, counter: RegExp): Promise<Set<LimitName>> {
  const found = new Set<LimitName>();
  for (const [file, limit] of Object.entries(files)) {
    const text = await readFile(path.join(dir, file), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      const match = counter.exec(line);
      if (match && Number(match[match.length - 1]) > 0) found.add(limit);
    }
  }
  return found;
}

/** Rounds of "kill what is left, then rmdir" before a cgroup is given up on (left in place). */
const REMOVE_ATTEMPTS = 20;

function cgroupOf(dirs: string[], hits: () => Promise<Set<LimitName>>): CommandCgroup {
  return {
    procsFiles: dirs.map((dir) => path.join(dir, 'cgroup.procs')),
    hits: () => hits().catch(() => new Set()),
    async remove() {
      for (const dir of dirs) {
        for (let attempt = 0; attempt < REMOVE_ATTEMPTS; attempt++) {
          const pids = (await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '')).split('\n').filter(Boolean);
          for (const pid of pids) {
            try {
              process.kill(Number(pid), 'SIGKILL');
            } catch {
              // ESRCH: gone meanwhile.
            }
          }
          if (
            await rmdir(dir).then(
              () => true,
              () => false,
            )
          )
            break;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }
    },
  };
}

/**
 * The program that joins the cgroup and then runs `argv`: a shell writes its own pid to each
 * `cgroup.procs` and execs, so the command's first process is already counted.
 */
export function joiningArgv(procsFiles: readonly string[], argv: readonly string[]): string[] {
  const script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
  return ['/bin/sh', '-c', script, 'forkpool-cgroup', ...procsFiles, '--', ...argv];
}

/**
 * Limits the command's ending and output show it reached, beside what a cgroup counted. Text is
 * trusted only from a command that failed (a `grep "out of memory"` that succeeds is no hit); a
 * command can fake it, and then only earns itself a tool error.
 */
export function limitsHitByOutput(output: string, outcome: { code: number | null; signal: string | null }, sandboxed: boolean): Set<LimitName> {
  const found = new Set<LimitName>();
  if (outcome.code === SIGXFSZ_STATUS || outcome.signal === 'SIGXFSZ') found.add('file size');
  if (outcome.code === 0) return found;
  if (/File size limit exceeded|File too large/.test(output)) found.add('file size');
  if (/fork: (retry: )?Resource temporarily unavailable|Cannot fork/i.test(output)) found.add('processes');
  if (/Cannot allocate memory|cannot allocate \d+ bytes|MemoryError|std::bad_alloc|out of memory/i.test(output)) found.add('memory');
  if (sandboxed && /No space left on device/.test(output)) found.add('/tmp size');
  return found;
}

/** The model-readable line for the limits reached. */
export function describeLimitHits(found: ReadonlySet<LimitName>, limits: BashLimits): string {
  const parts = [...found].map((limit) => {
    const field = LIMIT_FIELD[limit];
    const unit = field === 'bashMaxProcesses' ? '' : ' MiB';
    // "No space left" may also be the disk itself: the line says where the limit applies.
    const where = limit === '/tmp size' ? ', if it wrote to /tmp' : '';
    return `${limit} (toolLimits.${field} = ${limits[field as keyof BashLimits]}${unit}${where})`;
  });
  return `bash: the command hit the sandbox's limit on ${parts.join(', ')}; do the work in smaller steps or with less at once`;
}
