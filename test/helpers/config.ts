/**
 * Test configuration helpers: temp workspaces and a parsed config pointing at a sim.
 *
 *   const ws = await tempWorkspace({ 'a.txt': 'alpha' }, cleanup);   // realpath'd temp dir
 *   const config = testConfig({ baseUrl: sim.url, workspaceRoot: ws, maxRetries: 1 });
 */
import { ConfigError } from '../../src/shared/errors.js';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig, type ForkpoolConfig, type ForkpoolConfigInput } from '../../src/shared/config.js';
import type { Cleanup } from './cleanup.js';

/** Files to create, by workspace-relative path (parent folders are made). */
export type WorkspaceFiles = Record<string, string>;

/** A small default workspace: enough for the plausible sim agent to find something. */
export const DEFAULT_WORKSPACE_FILES: WorkspaceFiles = {
  'README.md': '# demo workspace\nThe tool loop lives in src/loop.ts.\n',
  'src/loop.ts': 'export function toolLoop() {\n  // retries with backoff, stops at maxIterations\n  return 42;\n}\n',
  'src/keys.ts': 'export const redactKeys = (s: string) => s.replace(/sk-[a-z]+/g, "[REDACTED]");\n',
};

/**
 * Creates a fresh temp directory holding `files` and returns its symlink-resolved absolute
 * path. With `cleanup`, the directory is removed after the test; without it, at process exit.
 */
export function tempWorkspace(files: WorkspaceFiles = DEFAULT_WORKSPACE_FILES, cleanup?: Cleanup): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'forkpool-test-')));
  for (const [rel, text] of Object.entries(files)) {
    const file = path.join(dir, rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  if (cleanup) cleanup.add(() => rmSync(dir, { recursive: true, force: true }));
  else removeAtExit(dir);
  return dir;
}

/** A research task the sim's plausible agent answers from the workspace below. */
export const RESEARCH_TASK = 'Where is the retry backoff implemented? Answer from the files in the workspace.';

/** The files of {@link makeWorkspace}: a retry backoff the research task finds, and a decoy. */
export const RESEARCH_WORKSPACE_FILES = {
  'src/retry.ts': [
    '// Retry with exponential backoff and jitter.',
    'export function retryBackoff(attempt: number): number {',
    '  return Math.min(8000, 500 * 2 ** attempt);',
    '}',
    '',
  ].join('\n'),
  'src/cache.ts': '// An LRU cache with a size limit.\nexport class LruCache {}\n',
  'README.md': '# demo workspace\nThe retry backoff lives in src/retry.ts.\n',
};

/** A temp workspace with {@link RESEARCH_WORKSPACE_FILES}, removed after the test. */
export async function makeWorkspace(cleanups: Cleanup): Promise<string> {
  return tempWorkspace(RESEARCH_WORKSPACE_FILES, cleanups);
}

const leftovers = new Set<string>();
function removeAtExit(dir: string): void {
  // One exit listener for all of them (one per dir would trip MaxListenersExceededWarning).
  if (leftovers.size === 0) process.once('exit', () => leftovers.forEach((d) => rmSync(d, { recursive: true, force: true })));
  leftovers.add(dir);
}

/**
 * A parsed, valid {@link ForkpoolConfig} for tests. Defaults differ from production where a
 * test needs them to: short request/stream timeouts (10 s / 5 s) so a bug fails instead of
 * hanging, no retries beyond 1, model `forkpool-sim`. `workspaceRoot` defaults to a fresh
 * {@link tempWorkspace}; `baseUrl` should be a sim's `url`. Overrides win.
 */
export function testConfig(overrides: Partial<ForkpoolConfigInput> = {}): ForkpoolConfig {
  return parseConfig({
    model: 'forkpool-sim',
    requestTimeoutMs: 10_000,
    firstByteTimeoutMs: 10_000,
    streamIdleTimeoutMs: 5_000,
    maxRetries: 1,
    ...overrides,
    workspaceRoot: overrides.workspaceRoot ?? tempWorkspace(),
  });
}

/** The ConfigError thrown by `fn`; fails the test if it does not throw one. */
export function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}
