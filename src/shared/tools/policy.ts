import path from 'node:path';
import type { ForkpoolConfig } from '../config.js';
import { DEFAULTS } from '../defaults.js';
import { ToolError } from '../errors.js';
import { hiddenPathsOf } from './hidden.js';
import type { ToolContext, ToolPolicy } from './types.js';

/** The policy a context without one gets: the secure defaults. */
export const DEFAULT_TOOL_POLICY: ToolPolicy = Object.freeze({
  sandbox: DEFAULTS.sandbox,
  bwrapPath: DEFAULTS.bwrapPath,
  network: DEFAULTS.sandboxNetwork,
  readPaths: [],
  protectedPaths: DEFAULTS.protectedPaths,
  allowProtectedWrites: false,
  hiddenPaths: [],
});

/** The tool policy a config asks for; put it in `ToolContext.policy`. */
export function toolPolicyFrom(
  config: Pick<
    ForkpoolConfig,
    'sandbox' | 'bwrapPath' | 'sandboxNetwork' | 'sandboxReadPaths' | 'protectedPaths' | 'allowProtectedWrites' | 'hiddenPaths' | 'ledger'
  >,
): ToolPolicy {
  return {
    sandbox: config.sandbox,
    bwrapPath: config.bwrapPath,
    network: config.sandboxNetwork,
    readPaths: [...config.sandboxReadPaths],
    protectedPaths: [...config.protectedPaths],
    allowProtectedWrites: config.allowProtectedWrites,
    // The manager has already resolved them (and added a library's ledger store) on the main thread.
    hiddenPaths: hiddenPathsOf(config),
  };
}

export function policyOf(ctx: Pick<ToolContext, 'policy'>): ToolPolicy {
  return ctx.policy ?? DEFAULT_TOOL_POLICY;
}

/** `./.git/` → `.git`; entries are workspace-relative with forward slashes. */
export function normalizeEntry(entry: string): string {
  return path.posix
    .normalize(entry.replaceAll('\\', '/'))
    .replace(/^\.\/+/, '')
    .replace(/\/+$/, '');
}

/**
 * The protected entry `relPath` (workspace-relative, forward slashes) falls under, if any.
 * Case-insensitive, so `.GIT/config` on a case-insensitive file system is caught too.
 */
export function protectedEntryOf(relPath: string, policy: ToolPolicy): string | undefined {
  if (policy.allowProtectedWrites) return undefined;
  const rel = relPath.toLowerCase();
  const segments = rel.split('/');
  for (const raw of policy.protectedPaths) {
    const entry = normalizeEntry(raw).toLowerCase();
    if (entry === '' || entry === '.') continue;
    if (!entry.includes('/') ? segments.includes(entry) : rel === entry || rel.startsWith(`${entry}/`)) return raw;
  }
  return undefined;
}

/** Throws the model-readable refusal when `relPath` is protected. */
export function assertNotProtected(relPath: string, policy: ToolPolicy, toolName: string): void {
  const entry = protectedEntryOf(relPath, policy);
  if (entry === undefined) return;
  throw new ToolError(
    'PERMISSION_DENIED',
    toolName,
    `path ${JSON.stringify(relPath)} is protected (${JSON.stringify(entry)} is in protectedPaths): writing there could run code at the next git command or leak configuration. ` +
      'Write elsewhere; the user can allow it with allowProtectedWrites',
  );
}
