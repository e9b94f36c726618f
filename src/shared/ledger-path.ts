/**
 * Where the durable ledger may live: not inside the workspace, where every job's file tools and
 * bash could read every result in it and rewrite one (a forged result that `--resume` would then
 * print). Checked at config time on resolved real paths, so a symlink or `..` does not hide it.
 */
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ConfigIssue } from './errors.js';
import { isInside } from './workspace-scope.js';

/** The real path of `file`, which may not exist yet: its deepest existing folder resolved, the rest appended. */
function realPathOfMaybeMissing(file: string): string {
  const missing: string[] = [];
  let current = file;
  for (;;) {
    try {
      return path.join(realpathSync(current), ...missing.reverse());
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return file;
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

/** Where a ledger named `file` could go instead: under `~/.forkpool/`, as docs/durability.md does. */
function suggestedLedgerPath(file: string): string {
  return path.join(os.homedir(), '.forkpool', path.basename(file));
}

/**
 * The issue with `ledger.path` inside `workspaceRoot`, or undefined. `ledger.path` is relative
 * to the working directory (as the ledger is opened); `allowInWorkspace` accepts it anyway.
 */
export function ledgerInWorkspaceIssue(ledger: { path?: string | undefined; allowInWorkspace: boolean }, workspaceRoot: string): ConfigIssue | undefined {
  if (ledger.path === undefined || ledger.allowInWorkspace) return undefined;
  const lexical = path.resolve(ledger.path);
  const files = new Set([lexical, realPathOfMaybeMissing(lexical)]);
  const roots = new Set([path.resolve(workspaceRoot), realPathOfMaybeMissing(path.resolve(workspaceRoot))]);
  for (const root of roots) {
    const file = [...files].find((candidate) => isInside(root, candidate));
    if (file === undefined) continue;
    return {
      field: 'ledger.path',
      // Name a place that works: a new user's first `--ledger run.db` lands in the workspace.
      expected: `a file outside the workspace, where no job can read or rewrite it, such as ${suggestedLedgerPath(ledger.path)} (its folder is made; set ledger.allowInWorkspace: true or pass --allow-ledger-in-workspace to force it)`,
      received: `${JSON.stringify(ledger.path)} (${file === lexical ? file : `${lexical}, really ${file}`}, inside the workspace ${root})`,
    };
  }
  return undefined;
}
