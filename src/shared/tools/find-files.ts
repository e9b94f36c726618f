import { stat } from 'node:fs/promises';
import path from 'node:path';
import { glob } from 'tinyglobby';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { displayPath, isInside, resolveInWorkspace } from './sandbox.js';
import type { ToolDefinition } from './types.js';
import { IGNORED_DIRS, capOutput, throwIfAborted } from './util.js';

const NAME = 'find_files';

const parameters = z.strictObject({
  pattern: z
    .string()
    .min(1)
    .describe('Glob pattern relative to `path`, e.g. "**/*.ts", "src/**/test_*.py", "*.{json,yaml}". No ".." segments or absolute paths.'),
  path: z.string().min(1).optional().describe('Directory to search from, relative to the workspace root. Default "." (the root).'),
});

export type FindFilesArgs = z.output<typeof parameters>;

export const findFilesTool: ToolDefinition<FindFilesArgs> = {
  name: NAME,
  description:
    'Find files by glob pattern (recursive with "**"). Returns workspace-relative paths, sorted. ' +
    `Skips ${IGNORED_DIRS.join(', ')} unless the search path is inside one; does not follow symbolic links; includes dotfiles.`,
  parameters,
  gated: false,
  describeCall: (args) => `find ${args.pattern} in ${args.path ?? '.'}`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    const pattern = args.pattern;
    if (pattern.includes('\0') || path.posix.isAbsolute(pattern) || pattern.split(/[\\/]/).includes('..')) {
      throw new ToolError(
        'PATH_OUTSIDE_WORKSPACE',
        NAME,
        `pattern ${JSON.stringify(pattern)} must be relative to the search path, without ".." segments or an absolute path; set "path" to choose where to search`,
      );
    }
    const dir = await resolveInWorkspace(ctx.workspaceRoot, args.path ?? '.', NAME, { mustExist: true });
    const shownDir = displayPath(ctx.workspaceRoot, dir);
    if (!(await stat(dir)).isDirectory()) {
      throw new ToolError('TOOL_FAILED', NAME, `${shownDir} is a file, not a directory; pass a directory as path`);
    }

    let matches: string[];
    try {
      matches = await glob(pattern, {
        cwd: dir,
        dot: true,
        onlyFiles: true,
        followSymbolicLinks: false,
        ignore: IGNORED_DIRS.map((d) => `**/${d}/**`),
        signal: ctx.signal,
      });
    } catch (error) {
      throwIfAborted(ctx.signal);
      throw new ToolError('TOOL_FAILED', NAME, `glob ${JSON.stringify(pattern)} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    throwIfAborted(ctx.signal);

    // Belt and braces: the pattern check above should already keep every result inside.
    const inside = matches.map((m) => path.resolve(dir, m)).filter((abs) => isInside(ctx.workspaceRoot, abs));
    if (inside.length === 0) return `No files match ${JSON.stringify(pattern)} under ${shownDir}.`;
    const shown = inside.map((abs) => displayPath(ctx.workspaceRoot, abs)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const cap = ctx.limits.findMaxResults;
    const listed = shown.slice(0, cap);
    const footer =
      shown.length > cap
        ? `\n[${shown.length} files match; showing the first ${cap}. Narrow the pattern or the path to see the rest]`
        : `\n[${shown.length} file${shown.length === 1 ? '' : 's'}]`;
    return capOutput(listed.join('\n') + footer, ctx.limits);
  },
};
