/**
 * The fault campaign's rig: the processes an operator runs (`forkpool fanout`, `forkpool worker`,
 * redis-server), started as child processes of the campaign, and the loopback simulator in the
 * campaign's own process, which counts every model request: a job's run is its first request
 * (system + task), found by the marker in its task.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SimServer } from 'forkpool/sim';
export { startRedis, type Redis } from '../redis-server.js';
export { startTcpProxy } from '../../test/helpers/tcp-proxy.js';
import { CLI } from '../paths.js';

export { CLI };

/** A folder for one scenario's files (configs, ledger, task file, Redis's AOF). */
export function scratch(name: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `forkpool-campaign-${name}-`));
}

/** The jobs' workspace: a file the simulated agent's grep finds. */
export function campaignWorkspace(): string {
  const dir = scratch('workspace');
  mkdirSync(path.join(dir, 'src'));
  writeFileSync(path.join(dir, 'src/retry.ts'), '// Retry with exponential backoff and jitter.\nexport const retryBackoff = (n: number) => 500 * 2 ** n;\n');
  return dir;
}

/** The marker of task `i`, in its text: the sim's log tells its runs apart by it. */
export const marker = (i: number) => `CMP-${i}-X`;

/** A JSONL task file of `count` lines; line n (1-based) carries marker n. */
export function taskFile(dir: string, count: number): string {
  const file = path.join(dir, 'tasks.jsonl');
  const lines = Array.from({ length: count }, (_, i) =>
    JSON.stringify({ task: `Where is the retry backoff implemented? (${marker(i + 1)})`, label: `t${i + 1}` }),
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** Model runs per task line: first requests (system + user) carrying the line's marker. */
export function runsByLine(sim: SimServer): Map<number, number> {
  const runs = new Map<number, number>();
  for (const request of sim.requests) {
    const body = request.body as { messages?: Array<{ role: string; content: unknown }> } | undefined;
    const messages = body?.messages ?? [];
    if (messages.length !== 2 || messages[1]?.role !== 'user') continue;
    const found = /CMP-(\d+)-X/.exec(String(messages[1].content));
    if (found) runs.set(Number(found[1]), (runs.get(Number(found[1])) ?? 0) + 1);
  }
  return runs;
}

/** A process the campaign started, with its stdout lines as they come. */
export interface Proc {
  child: ChildProcess;
  lines: string[];
  stderr: string;
  exited: Promise<number | null>;
  /** Resolves when a stdout line passes `test` (at once if one did). */
  waitForLine(test: (line: string) => boolean): Promise<void>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/** Whatever happens to the campaign, its processes go with it. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export function startProcess(args: string[], env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const lines: string[] = [];
  const watchers: Array<{ test: (line: string) => boolean; resolve: () => void }> = [];
  let partial = '';
  const proc: Proc = {
    child,
    lines,
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ? null : code))),
    waitForLine: (test) =>
      new Promise((resolve) => {
        if (lines.some(test)) return resolve();
        watchers.push({ test, resolve });
      }),
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return proc.exited;
    },
  };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      for (const watcher of [...watchers])
        if (watcher.test(line)) {
          watchers.splice(watchers.indexOf(watcher), 1);
          watcher.resolve();
        }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    // The tail is enough to say why a run failed.
    proc.stderr = (proc.stderr + chunk).slice(-4_000);
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return proc;
}

/** A `forkpool worker`, resolved once it says it is ready. */
export async function startWorker(redisUrl: string, queue: string, concurrency: number, configFile: string): Promise<Proc> {
  const worker = startProcess([
    'worker',
    '--redis',
    redisUrl,
    '--queue',
    queue,
    '--config',
    configFile,
    '--concurrency',
    String(concurrency),
    '--json',
    '--log-level',
    'error',
  ]);
  const ready = worker.waitForLine((line) => line.includes('"worker-ready"'));
  const died = worker.exited.then((code) => {
    throw new Error(`a worker exited (${code}) before it was ready: ${worker.stderr}`);
  });
  await Promise.race([ready, died]);
  died.catch(() => undefined);
  return worker;
}

export function writeJson(dir: string, name: string, value: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
