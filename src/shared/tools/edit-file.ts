import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { policyOf } from './policy.js';
import { openForWriting, overwrite } from './safe-fs.js';
import { displayPath } from './sandbox.js';
import type { ToolContext, ToolDefinition } from './types.js';
import { hasNulByte, throwIfAborted } from './util.js';

const NAME = 'edit_file';
/** Line numbers listed in an ambiguity error. */
const MAX_LINES_LISTED = 10;

const parameters = z.strictObject({
  path: z.string().min(1),
  old_text: z.string().min(1),
  new_text: z.string(),
  replace_all: z.boolean().optional(),
});

export type EditFileArgs = z.output<typeof parameters>;

export const editFileTool: ToolDefinition<EditFileArgs> = {
  name: NAME,
  description: 'Replace exact old_text (no line-number prefix) with new_text; it must occur once unless replace_all.',
  parameters,
  gated: true,
  describeCall: (args) => `edit ${args.path}${args.replace_all ? ' (replace all)' : ''}`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    if (args.old_text === args.new_text) {
      throw new ToolError('TOOL_ARGUMENTS_INVALID', NAME, 'old_text and new_text are identical; nothing would change');
    }
    // Opened read-write without following any link, protected paths refused: read and written
    // through the same descriptor, so what is edited is what was checked.
    const opened = await openForWriting(ctx.workspaceRoot, args.path, NAME, { policy: policyOf(ctx) });
    try {
      return await editOpened(opened.handle, opened.stats.size, displayPath(ctx.workspaceRoot, opened.realPath), args, ctx);
    } finally {
      await opened.handle.close();
    }
  },
};

async function editOpened(handle: FileHandle, size: number, shown: string, args: EditFileArgs, ctx: ToolContext): Promise<string> {
  // An edit needs the whole file in memory; bound it by the larger of the read limits.
  const maxBytes = Math.max(ctx.limits.readFileMaxBytes, ctx.limits.grepMaxFileBytes);
  if (size > maxBytes) throw new ToolError('TOOL_FAILED', NAME, `${shown} is ${size} bytes, over the ${maxBytes}-byte limit for edits`);
  const raw = await handle.readFile();
  if (hasNulByte(raw)) throw new ToolError('TOOL_FAILED', NAME, `${shown} looks like a binary file; edit_file only edits text`);
  const content = raw.toString('utf8');

  let oldText = args.old_text;
  let newText = args.new_text;
  let positions = occurrences(content, oldText);
  // A model usually sends "\n" line endings; match a CRLF file too, and keep its endings.
  if (positions.length === 0 && content.includes('\r\n') && oldText.includes('\n') && !oldText.includes('\r\n')) {
    oldText = oldText.replaceAll('\n', '\r\n');
    newText = newText.replaceAll(/\r?\n/g, '\r\n');
    positions = occurrences(content, oldText);
  }
  if (positions.length === 0) {
    throw new ToolError(
      'TOOL_FAILED',
      NAME,
      `old_text was not found in ${shown}. Read the file again and copy the exact text, including whitespace and indentation`,
    );
  }
  if (positions.length > 1 && !args.replace_all) {
    const lines = positions.slice(0, MAX_LINES_LISTED).map((p) => lineOf(content, p));
    const more = positions.length > MAX_LINES_LISTED ? ', …' : '';
    throw new ToolError(
      'TOOL_FAILED',
      NAME,
      `old_text occurs ${positions.length} times in ${shown} (at lines ${lines.join(', ')}${more}); ` +
        'include more surrounding lines to make it unique, or set replace_all: true to replace every occurrence',
    );
  }
  // Splice by index, not String.replace: new_text may contain "$&" and similar patterns.
  const parts: string[] = [];
  let from = 0;
  for (const p of positions) {
    parts.push(content.slice(from, p), newText);
    from = p + oldText.length;
  }
  parts.push(content.slice(from));
  throwIfAborted(ctx.signal);
  await overwrite(handle, parts.join(''));
  const firstLine = lineOf(content, positions[0] ?? 0);
  return positions.length === 1
    ? `Edited ${shown}: replaced 1 occurrence at line ${firstLine}.`
    : `Edited ${shown}: replaced ${positions.length} occurrences (first at line ${firstLine}).`;
}

/** Start indexes of the non-overlapping occurrences of `needle`. */
function occurrences(haystack: string, needle: string): number[] {
  const out: number[] = [];
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
