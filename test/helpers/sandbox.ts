/**
 * Helpers for the tool-security tests: bubblewrap detection that fails loudly, a /proc scan
 * for leftover processes, and a tool context with a policy and a process registry.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { DEFAULTS } from '../../src/shared/defaults.js';
import { ToolError } from '../../src/shared/errors.js';
import { probeBwrap } from '../../src/shared/tools/bwrap.js';
import { DEFAULT_TOOL_POLICY } from '../../src/shared/tools/policy.js';
import { scrubEnv } from '../../src/shared/tools/secrets.js';
import { skipWithout } from './system.js';
import type { ProcessRegistry, ToolContext, ToolDefinition, ToolPolicy } from '../../src/shared/tools/types.js';

/**
 * True when the bubblewrap tests should be skipped: bubblewrap is not installed here (one line
 * says so), or FORKPOOL_TEST_NO_BWRAP=1. Under `.ci/run` (FORKPOOL_TEST_REQUIRE_SYSTEM=1) they run
 * and fail instead. A function, so that only test files that need bubblewrap say it.
 */
export function skipWithoutBwrap(): boolean {
  return process.env.FORKPOOL_TEST_NO_BWRAP === '1' || skipWithout('bubblewrap', existsSync(DEFAULTS.bwrapPath));
}

/**
 * Throws unless bubblewrap works here: installed but unusable (no user namespaces, say) is a broken
 * setup, not a reason to pass quietly. Set FORKPOOL_TEST_NO_BWRAP=1 to skip these tests instead.
 */
export async function requireBwrap(): Promise<void> {
  const probe = await probeBwrap(DEFAULTS.bwrapPath);
  if (!probe.ok) {
    throw new Error(
      `bubblewrap is required for this test but is not usable (${probe.reason}); apt-get install bubblewrap, or set FORKPOOL_TEST_NO_BWRAP=1 to skip`,
    );
  }
}

/** Pids of live processes whose argv is exactly `argv` (a test's unique marker command). */
export function processesRunning(argv: readonly string[]): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const args = cmdline.split('\0').filter((a, i, all) => i < all.length - 1 || a !== '');
    // A zombie has an empty cmdline: it is dead, only not yet reaped.
    if (args.length === argv.length && args.every((a, i) => a === argv[i])) found.push(Number(entry));
  }
  return found;
}

/** A marker sleep no other test (or helper) starts: `sleep 1000.<random>`. */
export function markerSleep(): { command: string; argv: string[] } {
  const seconds = `1000.${Math.floor(Math.random() * 1e9)}`;
  return { command: `sleep ${seconds}`, argv: ['sleep', seconds] };
}

export interface RecordingRegistry extends ProcessRegistry {
  started: (pgid: number) => void;
  ended: (pgid: number) => void;
  log: Array<['started' | 'ended', number]>;
}

export function recordingRegistry(): RecordingRegistry {
  const log: Array<['started' | 'ended', number]> = [];
  return { log, started: (pgid) => log.push(['started', pgid]), ended: (pgid) => log.push(['ended', pgid]) };
}

export function toolContext(workspaceRoot: string, extra: Partial<Omit<ToolContext, 'policy'>> & { policy?: Partial<ToolPolicy> } = {}): ToolContext {
  const { policy, ...rest } = extra;
  return {
    workspaceRoot,
    limits: { ...DEFAULTS.tools },
    signal: new AbortController().signal,
    permissions: { check: async () => true },
    env: scrubEnv(process.env),
    ...rest,
    policy: { ...DEFAULT_TOOL_POLICY, ...policy },
  };
}

/** Validates like the tool loop, then runs. */
export function callTool(tool: ToolDefinition, args: unknown, ctx: ToolContext): Promise<string> {
  return tool.run(tool.parameters.parse(args), ctx);
}

/** The ToolError `promise` rejects with (fails the test if it resolves or rejects with anything else). */
export async function toolError(promise: Promise<unknown>): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}
