import path from 'node:path';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { withSearchSlot } from './fd-limit.js';
import { A_FILE, A_FOLDER, hiddenReason, hiddenSnapshot } from './hidden.js';
import { policyOf } from './policy.js';
import { openForReading } from './safe-fs.js';
import { displayPath } from './sandbox.js';
import type { ToolDefinition } from './types.js';
import { IGNORED_DIRS, capOutput, searchDeadline, throwIfAborted } from './util.js';
import { MAX_WALK_DEPTH, walkFiles } from './walk.js';

const NAME = 'find_files';
/** Matching paths kept for sorting; past this only counted (bounds memory on a huge tree). */
const MAX_KEPT = 100_000;

const parameters = z.strictObject({
  pattern: z.string().min(1).describe('e.g. "**/*.ts", "src/*.{js,json}"'),
  path: z.string().min(1).optional(),
});

export type FindFilesArgs = z.output<typeof parameters>;

export const findFilesTool: ToolDefinition<FindFilesArgs> = {
  name: NAME,
  description: `Find files by glob ("**" recurses). Skips ${IGNORED_DIRS.join(', ')}.`,
  parameters,
  gated: false,
  describeCall: (args) => `find ${args.pattern} in ${args.path ?? '.'}`,
  // One of a bounded number of searches at a time per thread (see withSearchSlot).
  run: (args, ctx) =>
    withSearchSlot(ctx, async () => {
      throwIfAborted(ctx.signal);
      const pattern = args.pattern;
      if (pattern.includes('\0') || path.posix.isAbsolute(pattern) || pattern.split(/[\\/]/).includes('..')) {
        throw new ToolError(
          'PATH_OUTSIDE_WORKSPACE',
          NAME,
          `pattern ${JSON.stringify(pattern)} must be relative to the search path, without ".." segments or an absolute path; set "path" to choose where to search`,
        );
      }
      // Linear-time glob matching (re2js unless the glob is simple), loaded on a thread's first find_files, not with every job's tools;
      // compiled before the folder is opened, so a refused glob leaves no descriptor behind.
      const isMatch = await (await import('./glob.js')).compileGlob(pattern, NAME, 'pattern');
      const policy = policyOf(ctx);
      const dir = await openForReading(ctx.workspaceRoot, args.path ?? '.', NAME, { kind: 'directory', signal: ctx.signal, policy }).catch((error: unknown) => {
        if (error instanceof ToolError && / is a file, not a directory/.test(error.message)) {
          throw new ToolError('TOOL_FAILED', NAME, `${error.message}; pass a directory as path`);
        }
        throw error;
      });
      const shownDir = displayPath(ctx.workspaceRoot, dir.realPath);
      const shown: string[] = [];
      let total = 0;
      const deadline = searchDeadline(NAME, ctx.limits.searchTimeoutMs, () => `${total} matching files`, 'search a smaller path or a narrower pattern');
      const hidden = await hiddenSnapshot(policy);
      let skippedHidden = 0;
      try {
        const walk = walkFiles(dir.handle, dir.realPath, {
          signal: ctx.signal,
          toolName: NAME,
          skipDirs: IGNORED_DIRS,
          pseudoDevices: dir.pseudoDevices,
          maxDepth: folderDepthOf(pattern),
          skipFolder: (abs) => hiddenReason(hidden, abs, A_FOLDER) !== undefined,
          onTick: () => deadline.check(),
        });
        for await (const file of walk) {
          if (!isMatch(file.rel)) continue;
          if (hiddenReason(hidden, file.abs, A_FILE) !== undefined) {
            skippedHidden++;
            continue;
          }
          total++;
          if (shown.length < MAX_KEPT) shown.push(displayPath(ctx.workspaceRoot, file.abs));
        }
      } finally {
        await dir.handle.close();
      }
      throwIfAborted(ctx.signal);
      const hiddenNote = skippedHidden
        ? `\n[${skippedHidden} matching file${skippedHidden === 1 ? '' : 's'} hidden from the tools (config, ledger or .env-style) not listed]`
        : '';
      if (total === 0) return `No files match ${JSON.stringify(pattern)} under ${shownDir}.${hiddenNote}`;
      shown.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const cap = ctx.limits.findMaxResults;
      const listed = shown.slice(0, cap);
      const footer =
        total > cap
          ? `\n[${total} files match; showing the first ${cap}. Narrow the pattern or the path to see the rest]`
          : `\n[${total} file${total === 1 ? '' : 's'}]`;
      return capOutput(listed.join('\n') + footer + hiddenNote, ctx.limits);
    }),
};

/**
 * How many folder levels a pattern can reach: a pattern without `**` matches only at the depth
 * of its segments, so the walk need not go deeper. Braces and groups may hide a "/" (and a
 * repeated group, `+(d/)`, any number of them): no limit then.
 */
function folderDepthOf(pattern: string): number {
  if (pattern.includes('**') || /[{(][^})]*\/[^})]*[})]/.test(pattern)) return MAX_WALK_DEPTH;
  return Math.min(MAX_WALK_DEPTH, pattern.split('/').filter(Boolean).length - 1);
}
