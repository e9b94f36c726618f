import { opendir } from 'node:fs/promises';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import path from 'node:path';
import { hiddenReason, hiddenSnapshot } from './hidden.js';
import { policyOf } from './policy.js';
import { atPath, procFdAvailable } from './proc-fd.js';
import { openForReading } from './safe-fs.js';
import { displayPath } from './sandbox.js';
import type { ToolDefinition } from './types.js';
import { capOutput, plural, throwIfAborted } from './util.js';

const NAME = 'list_dir';
/** Room kept for the footer when filling the output budget. */
const FOOTER_RESERVE = 200;

const parameters = z.strictObject({
  path: z.string().min(1).optional(),
});

export type ListDirArgs = z.output<typeof parameters>;

export const listDirTool: ToolDefinition<ListDirArgs> = {
  name: NAME,
  description: 'List a directory (not recursive). Directories end with "/", symlinks with "@".',
  parameters,
  gated: false,
  describeCall: (args) => `list ${args.path ?? '.'}`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    // The folder is opened (no link followed) and checked, then listed through its descriptor.
    const policy = policyOf(ctx);
    const opened = await openForReading(ctx.workspaceRoot, args.path ?? '.', NAME, { kind: 'directory', signal: ctx.signal, policy }).catch(
      (error: unknown) => {
        if (error instanceof ToolError && / is a file, not a directory/.test(error.message)) {
          throw new ToolError('TOOL_FAILED', NAME, `${error.message}; use read_file to read it`);
        }
        throw error;
      },
    );
    const shown = displayPath(ctx.workspaceRoot, opened.realPath);
    const first = new FirstByName(ctx.limits.findMaxResults);
    let total = 0;
    const hidden = await hiddenSnapshot(policy);
    try {
      for await (const entry of await opendir(procFdAvailable() ? atPath(opened.handle.fd) : opened.realPath)) {
        // A huge directory: stay responsive to a cancel while iterating it.
        throwIfAborted(ctx.signal);
        total++;
        const suffix = entry.isDirectory() ? '/' : entry.isSymbolicLink() ? '@' : '';
        // Names are listed (they hold no secret); the mark saves the model a refused read.
        const isHidden = !entry.isSymbolicLink() && hiddenReason(hidden, path.join(opened.realPath, entry.name), entry) !== undefined;
        first.offer(entry.name + suffix + (isHidden ? ' [hidden from the tools]' : ''));
      }
    } finally {
      await opened.handle.close();
    }
    if (total === 0) return `${shown}/ is empty.`;
    // Whole lines up to the output budget, never a cut in the middle: what is shown is exactly
    // the first entries by name, and the footer says how many follow.
    const header = `${shown}/ (${plural(total, 'entry', 'entries')})`;
    const budget = Math.max(ctx.limits.outputMaxChars - header.length - FOOTER_RESERVE, 0);
    const lines: string[] = [];
    let used = 0;
    for (const name of first.sorted()) {
      if (used + name.length + 1 > budget && lines.length > 0) break;
      lines.push(name);
      used += name.length + 1;
    }
    const more = total - lines.length;
    const footer = more > 0 ? `\n[the first ${lines.length} by name shown; ${more} more entries not shown. Use find_files with a pattern to narrow]` : '';
    return capOutput(`${header}\n${lines.join('\n')}${footer}`, ctx.limits);
  },
};

/**
 * The `cap` smallest names of a stream, in memory bounded by `2 × cap` whatever the directory
 * size: names are buffered, and when the buffer is full it is sorted and cut back to `cap`, so
 * a name at or past the cut can never be among the first and is dropped as it arrives.
 */
class FirstByName {
  readonly #cap: number;
  #names: string[] = [];
  #cutoff: string | undefined;

  constructor(cap: number) {
    this.#cap = cap;
  }

  offer(name: string): void {
    if (this.#cutoff !== undefined && name >= this.#cutoff) return;
    this.#names.push(name);
    if (this.#names.length >= 2 * this.#cap) this.#trim();
  }

  sorted(): string[] {
    this.#trim();
    return this.#names;
  }

  #trim(): void {
    this.#names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (this.#names.length > this.#cap) {
      this.#names.length = this.#cap;
      this.#cutoff = this.#names[this.#cap - 1];
    }
  }
}
