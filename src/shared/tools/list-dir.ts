import { opendir } from 'node:fs/promises';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import path from 'node:path';
import { hiddenReason, hiddenSnapshot } from './hidden.js';
import { policyOf } from './policy.js';
import { atPath, openForReading, procFdAvailable } from './safe-fs.js';
import { displayPath } from './sandbox.js';
import type { ToolDefinition } from './types.js';
import { capOutput, throwIfAborted } from './util.js';

const NAME = 'list_dir';
/** Entries read from one directory before giving up on an exact count (bounds memory). */
const MAX_SCAN = 100_000;

const parameters = z.strictObject({
  path: z.string().min(1).optional().describe('Directory to list, relative to the workspace root. Default "." (the root).'),
});

export type ListDirArgs = z.output<typeof parameters>;

export const listDirTool: ToolDefinition<ListDirArgs> = {
  name: NAME,
  description:
    'List the entries of a directory in the workspace, sorted by name. Directories end with "/", ' +
    'symbolic links with "@". Not recursive: use find_files for a recursive search.',
  parameters,
  gated: false,
  describeCall: (args) => `list ${args.path ?? '.'}`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    // The folder is opened (no link followed) and checked, then listed through its descriptor.
    const policy = policyOf(ctx);
    const opened = await openForReading(ctx.workspaceRoot, args.path ?? '.', NAME, { kind: 'directory', signal: ctx.signal, policy }).catch((error: unknown) => {
      if (error instanceof ToolError && / is a file, not a directory/.test(error.message)) {
        throw new ToolError('TOOL_FAILED', NAME, `${error.message}; use read_file to read it`);
      }
      throw error;
    });
    const shown = displayPath(ctx.workspaceRoot, opened.realPath);
    const entries: string[] = [];
    let scanned = 0;
    const hidden = await hiddenSnapshot(policy);
    try {
      for await (const entry of await opendir(procFdAvailable() ? atPath(opened.handle.fd) : opened.realPath)) {
        // A huge directory: stay responsive to a cancel while iterating it.
        throwIfAborted(ctx.signal);
        scanned++;
        if (entries.length >= MAX_SCAN) continue;
        const suffix = entry.isDirectory() ? '/' : entry.isSymbolicLink() ? '@' : '';
        // Names are listed (they hold no secret); the mark saves the model a refused read.
        const isHidden = !entry.isSymbolicLink() && hiddenReason(hidden, path.join(opened.realPath, entry.name), entry) !== undefined;
        entries.push(entry.name + suffix + (isHidden ? ' [hidden from the tools]' : ''));
      }
    } finally {
      await opened.handle.close();
    }
    if (entries.length === 0) return `${shown}/ is empty.`;
    entries.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const cap = ctx.limits.findMaxResults;
    const shownEntries = entries.slice(0, cap);
    const header = `${shown}/ (${scanned} ${scanned === 1 ? 'entry' : 'entries'})`;
    const footer = scanned > shownEntries.length ? `\n[${scanned - shownEntries.length} more entries not shown; use find_files with a pattern to narrow]` : '';
    return capOutput(`${header}\n${shownEntries.join('\n')}${footer}`, ctx.limits);
  },
};
