/**
 * Runs the built CLI (`node dist/cli/index.js`) as a real child process. Build first
 * (`npm run build`). The child's environment never inherits model settings from the
 * developer's shell: OPENAI_*, ANTHROPIC_* and FORKPOOL_* variables are removed unless passed explicitly.
 *
 *   const r = await runCli(['run', 'hello'], { cwd: ws });          // waits for exit
 *   const p = spawnCli(['sim', '--port', '0'], { cleanup });         // interactive
 *   await p.waitForStdout((s) => s.includes('listening'));
 *   p.child.kill('SIGTERM'); const r2 = await p.exited;
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll } from 'vitest';
import type { Cleanup } from './cleanup.js';
import { noteHostOutput } from './host-faults.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI_PATH = path.join(REPO_ROOT, 'dist', 'cli', 'index.js');

export interface CliOptions {
  /** Extra environment (wins over the inherited, scrubbed one). */
  env?: Record<string, string>;
  /** Written to stdin, then stdin is closed. Default: stdin closed at once. */
  input?: string;
  /** Leave stdin open (write to `child.stdin` and end it from the test); `input` is ignored. */
  keepStdinOpen?: boolean;
  /** Working directory; default the repo root. */
  cwd?: string;
  /** Safety net: SIGKILL after this many ms (the result says `timedOut`). Default 45 s. */
  timeoutMs?: number;
  /** Kills the process after the test if it is still running. */
  cleanup?: Cleanup;
  /** Run this node script (repo-relative) instead of the CLI; `args` go to it. */
  script?: string;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface CliProcess {
  child: ChildProcess;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited and its pipes closed. */
  exited: Promise<CliResult>;
  /** Resolves with the stdout so far once `test(stdout)` holds; rejects if the process exits first. */
  waitForStdout(test: (stdout: string) => boolean): Promise<string>;
  /** The same for stderr. */
  waitForStderr(test: (stderr: string) => boolean): Promise<string>;
}

/** `process.env` without OPENAI_* / ANTHROPIC_* / FORKPOOL_* variables, plus `extra`. */
export function cliEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || /^(OPENAI_|ANTHROPIC_|FORKPOOL_)/i.test(name)) continue;
    env[name] = value;
  }
  return { ...env, NO_COLOR: '1', ...extra };
}

/** Starts the CLI and returns at once; see {@link CliProcess}. */
export function spawnCli(args: readonly string[], opts: CliOptions = {}): CliProcess {
  if (!existsSync(CLI_PATH)) throw new Error(`${CLI_PATH} is missing: run "npm run build" before the CLI tests`);
  const child = spawn(process.execPath, [opts.script ? path.join(REPO_ROOT, opts.script) : CLI_PATH, ...args], {
    cwd: opts.cwd ?? REPO_ROOT,
    env: cliEnv(opts.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let timedOut = false;
  const watchers = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    for (const w of watchers) w();
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const w of watchers) w();
  });
  child.stdin.on('error', () => {});
  if (!opts.keepStdinOpen) child.stdin.end(opts.input ?? '');
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, opts.timeoutMs ?? 45_000);
  const exited = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    // 'close' (not 'exit'): every byte of stdout/stderr has been read by then.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      // The suite-wide check: a host fault the child printed fails the test (see host-faults.ts).
      noteHostOutput(`child ${path.basename(opts.script ?? 'forkpool')} ${args.slice(0, 1).join(' ')}`, stderr);
      for (const w of watchers) w();
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
  opts.cleanup?.add(async () => {
    clearTimeout(timer);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited.catch(() => {});
    }
  });
  const done = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForStdout: (test) => waitFor('stdout', () => stdout, test),
    waitForStderr: (test) => waitFor('stderr', () => stderr, test),
  };

  function waitFor(name: string, text: () => string, test: (text: string) => boolean): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const check = () => {
        if (test(text())) {
          watchers.delete(check);
          resolve(text());
        } else if (done()) {
          watchers.delete(check);
          reject(new Error(`process exited (code ${child.exitCode}) before the expected ${name}.\nstdout:\n${stdout}\nstderr:\n${stderr}`));
        }
      };
      watchers.add(check);
      check();
    });
  }
}

/** Runs the CLI to completion and returns exit code and output. */
export function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  return spawnCli(args, opts).exited;
}

/** Parses every non-empty line as JSON; throws naming the first line that is not. */
export function parseJsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      try {
        const value: unknown = JSON.parse(line);
        if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('not an object');
        return value as Record<string, unknown>;
      } catch (error) {
        throw new Error(`stdout line ${i + 1} is not a JSON object (${(error as Error).message}): ${line}`, { cause: error });
      }
    });
}

/** A one-line summary of a CLI result, for assertion messages. */
export function describeResult(r: CliResult): string {
  return `exit ${r.code ?? r.signal}${r.timedOut ? ' (timed out)' : ''}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`;
}

/**
 * Fails the calling file's tests at once, naming the fix, when the CLI is not built (`npm test`
 * builds first; a lone `npx vitest run` may not have). Call at the top of a test file.
 */
export function requireBuiltCli(): void {
  beforeAll(() => {
    if (!existsSync(CLI_PATH)) throw new Error(`run "npm run build" first: ${CLI_PATH} is missing`);
  });
}

/** JSON Lines for the CLI's stdin or a tasks file: objects stringified, strings as they are (a raw or broken line). */
export function jsonl(lines: readonly unknown[]): string {
  return lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';
}
