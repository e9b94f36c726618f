import { z } from 'zod';
import { ToolError } from '../errors.js';
import { policyOf } from './policy.js';
import { openForReading } from './safe-fs.js';
import { displayPath } from './sandbox.js';
import type { FileHandle } from 'node:fs/promises';
import type { ToolContext, ToolDefinition } from './types.js';
import { capOutput, hasNulByte, plural, readHead, readLines, throwIfAborted } from './util.js';

const NAME = 'read_file';
/** Longer lines are cut in the output (minified files would otherwise flood it). */
const MAX_LINE_CHARS = 2000;
/** Room kept for the footer when filling the output budget. */
const FOOTER_RESERVE = 400;

const parameters = z.strictObject({
  path: z.string().min(1).describe('Workspace-relative path.'),
  offset: z.number().int().min(1).optional().describe('First line, 1-based.'),
  limit: z.number().int().min(1).optional().describe('Max lines.'),
});

export type ReadFileArgs = z.output<typeof parameters>;

export const readFileTool: ToolDefinition<ReadFileArgs> = {
  name: NAME,
  description: 'Read a text file, lines numbered. For a large file pass offset and limit.',
  parameters,
  gated: false,
  describeCall: (args) => `read ${args.path}`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    // Opened first, checked after (what was opened, not the path): a racing swap cannot redirect it.
    const opened = await openForReading(ctx.workspaceRoot, args.path, NAME, { signal: ctx.signal, policy: policyOf(ctx) });
    try {
      const shown = displayPath(ctx.workspaceRoot, opened.realPath);
      const seen: SeenLines = {};
      const output = await readOpened(opened.handle, opened.stats.size, shown, args, ctx, seen);
      if (ctx.reads && seen.lines) await ctx.reads.record(opened.handle, opened.stats, shown, seen.lines);
      return output;
    } finally {
      await opened.handle.close();
    }
  },
};

/** The 1-based line range an output showed, set by {@link readOpened} (none: nothing shown). */
interface SeenLines {
  lines?: [number, number];
}

async function readOpened(handle: FileHandle, size: number, shown: string, args: ReadFileArgs, ctx: ToolContext, seen: SeenLines): Promise<string> {
  if (size === 0) {
    seen.lines = [1, 1];
    return `(${shown} is empty)`;
  }

  if (hasNulByte(await readHead(handle))) {
    throw new ToolError('TOOL_FAILED', NAME, `${shown} looks like a binary file (NUL byte in its first 8 KiB); read_file only reads text`);
  }
  const windowed = args.offset !== undefined || args.limit !== undefined;
  const maxBytes = ctx.limits.readFileMaxBytes;
  if (size > maxBytes && !windowed) {
    throw new ToolError(
      'TOOL_FAILED',
      NAME,
      `${shown} is ${size} bytes, over the ${maxBytes}-byte limit for a whole-file read; ` +
        `read a window instead, e.g. offset: 1, limit: ${ctx.limits.readFileDefaultLines}, or use grep to find the part you need`,
    );
  }

  const offset = args.offset ?? 1;
  const limit = args.limit ?? ctx.limits.readFileDefaultLines;
  const budget = Math.max(ctx.limits.outputMaxChars - FOOTER_RESERVE, 200);
  const out: string[] = [];
  let used = 0;
  let last = offset - 1; // last line number shown
  let moreAfter = false; // a line past the window exists
  let budgetHit = false;
  let anyCut = false;
  // Count the total only for files small enough to scan cheaply to the end.
  const countAll = size <= maxBytes;

  // Bounded: at most readFileMaxScanBytes, and never past a NUL byte (binary data, or a sparse
  // file's hole: one endless line of zeros that would be read to its end).
  const scanLimit = ctx.limits.readFileMaxScanBytes;
  const result = await readLines(handle, { maxLineChars: MAX_LINE_CHARS, maxBytes: scanLimit, stopAtNul: true, signal: ctx.signal }, (text, n, cut) => {
    if (n < offset) return true;
    if (n >= offset + limit || budgetHit) {
      moreAfter = true;
      return countAll;
    }
    const line = `${String(n).padStart(5)}\t${text}${cut ? ' … [line cut]' : ''}`;
    if (used + line.length + 1 > budget && out.length > 0) {
      budgetHit = true;
      moreAfter = true;
      return countAll;
    }
    out.push(line);
    used += line.length + 1;
    last = n;
    anyCut ||= cut;
    return true;
  });

  const cutShort = result.stoppedBy === 'nul' || result.stoppedBy === 'maxBytes';
  const where =
    result.stoppedBy === 'nul'
      ? `a NUL byte at byte ${result.nulAt ?? 0} (binary data or a sparse hole follows; read_file reads text only)`
      : `the ${scanLimit}-byte scan limit of one call`;
  const total = countAll && !cutShort ? result.lines : undefined;
  if (out.length === 0) {
    if (cutShort) return `${shown}: reading stopped at ${where} before line ${offset}; use grep to find the part you need.`;
    const size = total !== undefined ? `has ${plural(total, 'line')}` : `has fewer than ${offset} lines`;
    return `${shown} ${size}; offset ${offset} is past the end of the file.`;
  }
  seen.lines = [offset, last];
  const notes: string[] = [];
  const of = total !== undefined ? ` of ${total}` : '';
  if (moreAfter) {
    const why = budgetHit ? 'the output size limit was reached' : `limit ${limit} reached`;
    notes.push(`[showing lines ${offset}-${last}${of} of ${shown}; ${why}. To read more, call read_file with offset: ${last + 1}]`);
  } else if (offset > 1 && !cutShort) {
    notes.push(`[showing lines ${offset}-${last}${of} of ${shown}; end of file]`);
  }
  if (cutShort && !moreAfter) notes.push(`[reading stopped at ${where}; nothing after it is shown]`);
  if (anyCut) notes.push(`[lines longer than ${MAX_LINE_CHARS} characters were cut]`);
  return capOutput(notes.length ? `${out.join('\n')}\n\n${notes.join('\n')}` : out.join('\n'), ctx.limits);
}
