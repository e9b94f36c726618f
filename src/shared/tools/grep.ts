import { opendir, stat } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { displayPath, resolveInWorkspace } from './sandbox.js';
import type { ToolDefinition } from './types.js';
import { IGNORED_DIRS, capOutput, plural, readLines, throwIfAborted } from './util.js';

const NAME = 'grep';
/** Characters of a matching line shown in the output. */
const SHOWN_LINE_CHARS = 240;
/** Lines longer than this are matched only on their first part. */
const MATCH_LINE_CHARS = 64 * 1024;
const FOOTER_RESERVE = 400;

const parameters = z.strictObject({
  pattern: z.string().min(1).describe('JavaScript regular expression to search for, e.g. "function\\s+spawn" or "cancel|abort".'),
  path: z.string().min(1).optional().describe('File or directory to search, relative to the workspace root. Default "." (the root).'),
  glob: z.string().min(1).optional().describe('Only search files matching this glob, e.g. "*.ts" (matched on the file name) or "src/**/*.py" (matched on the path under `path`).'),
  ignore_case: z.boolean().optional().describe('Case-insensitive match. Default false.'),
  max_results: z.number().int().min(1).optional().describe('Stop after this many matching lines. Default and maximum: the configured grepMaxMatches (200).'),
});

export type GrepArgs = z.output<typeof parameters>;

export const grepTool: ToolDefinition<GrepArgs> = {
  name: NAME,
  description:
    'Search file contents with a JavaScript regular expression. Prints "path:line: text" for each matching line. ' +
    `Skips ${IGNORED_DIRS.join(', ')}, symbolic links, binary files and very large files.`,
  parameters,
  gated: false,
  describeCall: (args) => `grep /${args.pattern}/ in ${args.path ?? '.'}`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    let regex: RegExp;
    try {
      regex = new RegExp(args.pattern, args.ignore_case ? 'i' : '');
    } catch (error) {
      throw new ToolError('TOOL_ARGUMENTS_INVALID', NAME, `invalid regular expression ${JSON.stringify(args.pattern)}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    const start = await resolveInWorkspace(ctx.workspaceRoot, args.path ?? '.', NAME, { mustExist: true });
    const shownStart = displayPath(ctx.workspaceRoot, start);
    const startInfo = await stat(start);
    const matchesGlob = args.glob ? picomatch(args.glob, { dot: true, basename: !args.glob.includes('/') }) : undefined;

    const maxMatches = Math.min(args.max_results ?? ctx.limits.grepMaxMatches, ctx.limits.grepMaxMatches);
    const budget = Math.max(ctx.limits.outputMaxChars - FOOTER_RESERVE, 200);
    const out: string[] = [];
    let used = 0;
    let matches = 0;
    let budgetHit = false;
    let searched = 0;
    let skippedLarge = 0;
    let skippedBinary = 0;
    let unreadable = 0;

    const files = startInfo.isDirectory() ? walkFiles(start) : single(start);
    for await (const file of files) {
      // Between files: a cancel stops the search promptly without leaving a file open.
      throwIfAborted(ctx.signal);
      if (matches >= maxMatches || budgetHit) break;
      if (matchesGlob && !matchesGlob(path.relative(start, file).split(path.sep).join('/') || path.basename(file))) continue;
      let size: number;
      try {
        const info = await stat(file);
        if (!info.isFile()) continue;
        size = info.size;
      } catch {
        unreadable++;
        continue;
      }
      if (size > ctx.limits.grepMaxFileBytes) {
        skippedLarge++;
        continue;
      }
      const shownFile = displayPath(ctx.workspaceRoot, file);
      searched++;
      try {
        const result = await readLines(
          file,
          { maxLineChars: MATCH_LINE_CHARS, maxBytes: ctx.limits.grepMaxFileBytes, detectBinary: true, signal: ctx.signal },
          (text, n) => {
            const m = regex.exec(text);
            if (!m) return true;
            const line = `${shownFile}:${n}: ${excerpt(text, m.index)}`;
            if (used + line.length + 1 > budget) {
              budgetHit = true;
              return false;
            }
            out.push(line);
            used += line.length + 1;
            return ++matches < maxMatches;
          },
        );
        if (result.binary) {
          skippedBinary++;
          searched--;
        }
      } catch {
        throwIfAborted(ctx.signal);
        unreadable++;
        searched--;
      }
    }

    const notes: string[] = [];
    if (matches >= maxMatches) notes.push(`[stopped at ${plural(maxMatches, 'match', 'matches')}; narrow the pattern, path or glob to see others]`);
    else if (budgetHit) notes.push(`[stopped after ${plural(matches, 'match', 'matches')}: output size limit reached; narrow the search]`);
    const skipped: string[] = [];
    if (skippedLarge) skipped.push(`${plural(skippedLarge, 'file')} over ${ctx.limits.grepMaxFileBytes} bytes`);
    if (skippedBinary) skipped.push(`${plural(skippedBinary, 'binary file')}`);
    if (unreadable) skipped.push(`${plural(unreadable, 'unreadable file')}`);
    if (skipped.length) notes.push(`[skipped ${skipped.join(', ')}]`);
    if (out.length === 0) {
      const base = `No matches for /${args.pattern}/${args.ignore_case ? 'i' : ''} in ${shownStart}${args.glob ? ` (glob ${args.glob})` : ''}; searched ${plural(searched, 'file')}.`;
      return [base, ...notes].join('\n');
    }
    return capOutput(`${out.join('\n')}${notes.length ? `\n\n${notes.join('\n')}` : ''}`, ctx.limits);
  },
};

/** Shows a long line around its match instead of only its start. */
function excerpt(text: string, index: number): string {
  if (text.length <= SHOWN_LINE_CHARS) return text;
  const from = index < SHOWN_LINE_CHARS / 2 ? 0 : Math.max(0, index - 60);
  const to = Math.min(text.length, from + SHOWN_LINE_CHARS);
  return `${from > 0 ? '…' : ''}${text.slice(from, to)}${to < text.length ? '…' : ''}`;
}

async function* single(file: string): AsyncGenerator<string> {
  yield file;
}

/**
 * Depth-first walk yielding regular files in name order. Never follows symbolic links and skips
 * the ignored directories, so it cannot leave the tree it starts in. Holds one directory's
 * names at a time per level, not the tree.
 */
async function* walkFiles(dir: string): AsyncGenerator<string> {
  let names: { name: string; dir: boolean }[];
  try {
    names = [];
    for await (const entry of await opendir(dir)) {
      if (entry.isSymbolicLink()) continue;
      if (entry.isDirectory()) {
        if (!IGNORED_DIRS.includes(entry.name)) names.push({ name: entry.name, dir: true });
      } else if (entry.isFile()) names.push({ name: entry.name, dir: false });
    }
  } catch {
    return; // unreadable directory: skip it
  }
  names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of names) {
    const full = path.join(dir, entry.name);
    if (entry.dir) yield* walkFiles(full);
    else yield full;
  }
}
