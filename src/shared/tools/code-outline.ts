import path from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { policyOf } from './policy.js';
import { openForReading } from './safe-fs.js';
import { displayPath } from './sandbox.js';
import type { ToolDefinition } from './types.js';
import { capOutput, hasNulByte, plural, throwIfAborted } from './util.js';

const NAME = 'code_outline';
const EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'];

const parameters = z.strictObject({
  path: z.string().min(1).describe('A .js/.ts file (or .tsx, .mjs, ...).'),
});

export type CodeOutlineArgs = z.output<typeof parameters>;

/**
 * Parses a source file and lists its symbols with line ranges: a cheap map of a file before
 * reading the part that matters. The parse is synchronous CPU work (the tool that blocks its
 * thread for real); the parser module is loaded on the first call only.
 */
export const codeOutlineTool: ToolDefinition<CodeOutlineArgs> = {
  name: NAME,
  description: 'List the definitions of a JS/TS file as "start-end kind name" lines, to read_file just the range you need.',
  parameters,
  gated: false,
  describeCall: (args) => `outline ${args.path}`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    const extension = path.extname(args.path).toLowerCase();
    if (!EXTENSIONS.includes(extension)) {
      throw new ToolError(
        'TOOL_FAILED',
        NAME,
        `path must name a JavaScript or TypeScript file (${EXTENSIONS.join(', ')}); received ${JSON.stringify(args.path)}. Use read_file for other files`,
      );
    }
    // Opened first, checked after (what was opened, not the path), as read_file does.
    const opened = await openForReading(ctx.workspaceRoot, args.path, NAME, { signal: ctx.signal, policy: policyOf(ctx) });
    const shown = displayPath(ctx.workspaceRoot, opened.realPath);
    let source: string;
    try {
      source = await readWhole(opened.handle, opened.stats.size, ctx.limits.outlineMaxBytes, shown);
      // It read the whole file: recorded for the stale check at delivery (see file-reads.ts).
      await ctx.reads?.record(opened.handle, opened.stats, shown);
    } finally {
      await opened.handle.close();
    }
    throwIfAborted(ctx.signal);
    const { outlineSource, OutlineSyntaxError, OUTLINE_LANGUAGES } = await import('./outline.js');
    const declarationFile = /\.d\.[cm]?ts$/i.test(args.path);
    let symbols;
    try {
      symbols = outlineSource(source, extension, { declarationFile });
    } catch (error) {
      if (error instanceof OutlineSyntaxError) {
        const where = error.line !== undefined ? ` at line ${error.line}${error.column !== undefined ? `, column ${error.column}` : ''}` : '';
        throw new ToolError(
          'TOOL_FAILED',
          NAME,
          `${shown} does not parse${where}: ${error.message.replace(/\s*\(\d+:\d+\)$/, '')}. Read that part with read_file`,
          { cause: error },
        );
      }
      throw error;
    }
    const lines = countLines(source);
    const header = `${shown} (${OUTLINE_LANGUAGES[extension]?.language ?? extension}): ${plural(symbols.length, 'symbol')}, ${plural(lines, 'line')}`;
    if (symbols.length === 0) return `${header} (no functions, classes, types or exports at the top level).`;
    const width = String(lines).length;
    const body = symbols.map((s) => {
      const range = `${String(s.startLine).padStart(width)}-${String(s.endLine).padEnd(width)}`;
      const kind = `${s.exported && s.kind !== 'export' ? 'export ' : ''}${s.static ? 'static ' : ''}${s.kind}`;
      const params = s.params !== undefined ? `(${s.params})` : '';
      // A constructor is named by its kind alone.
      const label = s.kind === 'constructor' ? kind : `${kind} ${s.name}`;
      return `${range}  ${'  '.repeat(s.depth)}${label}${params}`;
    });
    return capOutput(`${header}\n${body.join('\n')}`, ctx.limits);
  },
};

/** The file's text; refuses one over `maxBytes` (also if it grew past it while read) or a binary one. */
async function readWhole(handle: FileHandle, size: number, maxBytes: number, shown: string): Promise<string> {
  const tooBig = (bytes: number) =>
    new ToolError(
      'TOOL_FAILED',
      NAME,
      `${shown} is ${bytes} bytes, over the ${maxBytes}-byte limit for an outline (toolLimits.outlineMaxBytes); use grep to find the part you need`,
    );
  if (size > maxBytes) throw tooBig(size);
  // One byte more than expected: a file that grew while read is seen, then read to the limit.
  let buffer = Buffer.alloc(size + 1);
  let filled = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
    if (filled < buffer.length) continue;
    if (filled > maxBytes) throw tooBig(filled);
    buffer = Buffer.concat([buffer, Buffer.alloc(maxBytes + 1 - buffer.length)]);
  }
  if (hasNulByte(buffer, filled))
    throw new ToolError('TOOL_FAILED', NAME, `${shown} looks like a binary file (NUL byte in its first 8 KiB); code_outline only parses source text`);
  return buffer.toString('utf8', 0, filled);
}

function countLines(text: string): number {
  if (text.length === 0) return 0;
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n - 1 : n;
}
