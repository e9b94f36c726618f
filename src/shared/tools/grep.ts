import { createHash } from 'node:crypto';
import { closeSync, fstatSync, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { withSearchSlot } from './fd-limit.js';
import { HASH_MAX_BYTES } from './file-reads.js';
import { A_FILE, A_FOLDER, hiddenReason, hiddenSnapshot } from './hidden.js';
import { policyOf } from './policy.js';
import { openForReading } from './safe-fs.js';
import { displayPath } from './sandbox.js';
import type { ToolDefinition } from './types.js';
import { IGNORED_DIRS, capOutput, plural, readLines, readLinesSync, searchDeadline, throwIfAborted, type LineReadResult } from './util.js';
import { openWalkedFile, openWalkedFileSync, walkFiles, type WalkedFile } from './walk.js';

const NAME = 'grep';
/** Characters of a matching line shown in the output. */
const SHOWN_LINE_CHARS = 240;
const FOOTER_RESERVE = 400;
/** Blocking reads of small files, by every search on this thread, take at most this long per turn of its event loop. */
const SYNC_SLICE_MS = 1;
/** When this turn of the thread's event loop began its blocking reads; cleared when the loop turns. */
let sliceStart: number | undefined;

/**
 * Milliseconds of blocking reads in this turn of the event loop, counted across searches: eight
 * greps on one thread (inline, shared) each taking their own 2 ms would hold the loop for 16.
 */
function sliceSpent(): number {
  const now = performance.now();
  if (sliceStart === undefined) {
    sliceStart = now;
    // Queued before the searches that wait for the next turn, so it runs first in that turn.
    setImmediate(() => {
      sliceStart = undefined;
    });
  }
  return now - sliceStart;
}

const parameters = z.strictObject({
  pattern: z.string().min(1).describe('RE2 regex (no lookaround or backreferences).'),
  path: z.string().min(1).optional(),
  glob: z.string().min(1).optional().describe('File filter, e.g. "*.ts".'),
  ignore_case: z.boolean().optional(),
  max_results: z.number().int().min(1).optional(),
});

export type GrepArgs = z.output<typeof parameters>;

export const grepTool: ToolDefinition<GrepArgs> = {
  name: NAME,
  description: `Search file contents by regex; prints "path:line: text". Skips ${IGNORED_DIRS.join(', ')} and binary files.`,
  parameters,
  gated: false,
  describeCall: (args) => `grep /${args.pattern}/ in ${args.path ?? '.'}`,
  // One of a bounded number of searches at a time per thread (see withSearchSlot).
  run: (args, ctx) =>
    withSearchSlot(ctx, async () => {
      throwIfAborted(ctx.signal);
      // Loaded on a thread's first grep, not with every job's tools (re2js only for a pattern that needs it).
      const { compileLinear } = await import('./regex.js');
      const regex = await compileLinear(args.pattern, args.ignore_case ?? false, NAME);
      // Before the start is opened: a refused glob leaves no descriptor behind.
      const matchesGlob = args.glob
        ? await (await import('./glob.js')).compileGlob(args.glob, NAME, 'glob', { basename: !args.glob.includes('/') })
        : undefined;
      // A per-call time limit: matching is linear, but a huge tree can still take long to walk.
      let matches = 0;
      const deadline = searchDeadline(NAME, ctx.limits.searchTimeoutMs, () => plural(matches, 'match', 'matches'), 'search a smaller path or use a glob');
      const checkDeadline = () => deadline.check();
      const policy = policyOf(ctx);
      // A hidden file named as the path is refused; one met in the walk is skipped unread, and counted.
      const start = await openForReading(ctx.workspaceRoot, args.path ?? '.', NAME, { kind: 'any', signal: ctx.signal, policy });
      const hidden = await hiddenSnapshot(policy);
      const startAbs = start.realPath;
      const shownStart = displayPath(ctx.workspaceRoot, startAbs);
      // The devices the start was checked against, read as it was opened: the walk uses the same.
      const pseudoDevices = start.pseudoDevices;

      const maxMatches = Math.min(args.max_results ?? ctx.limits.grepMaxMatches, ctx.limits.grepMaxMatches);
      const budget = Math.max(ctx.limits.outputMaxChars - FOOTER_RESERVE, 200);
      const out: string[] = [];
      let used = 0;
      let budgetHit = false;
      let searched = 0;
      let skippedLarge = 0;
      let skippedBinary = 0;
      let unreadable = 0;
      /** Lines longer than the matcher takes: only their first `regex.maxLineChars` were searched. */
      let cutLines = 0;
      let skippedHidden = 0;

      /** A file open as a handle (read with async calls) or as a raw descriptor (a small walked file: blocking reads). */
      type Source = { handle: FileHandle } | { fd: number };
      const searchOne = async (source: Source, stats: Stats, shownFile: string): Promise<void> => {
        const size = stats.size;
        const linesBefore = out.length;
        const matchedHere = (now: number) => now > linesBefore;
        if (size > ctx.limits.grepMaxFileBytes) {
          skippedLarge++;
          return;
        }
        searched++;
        // The evidence hash comes from the bytes searched (no second read of a file that matched).
        const hash = ctx.reads && size <= HASH_MAX_BYTES ? createHash('sha256') : undefined;
        try {
          const options = {
            maxLineChars: regex.maxLineChars,
            maxBytes: ctx.limits.grepMaxFileBytes,
            detectBinary: true,
            signal: ctx.signal,
            ...(hash ? { onChunk: (bytes: Buffer) => hash.update(bytes) } : {}),
          };
          const onLine = (text: string, n: number, cut: boolean): boolean => {
            // Every line: one match call is bounded (regex.maxLineChars), so the limit is
            // overrun by at most one call. (A check costs far less than a match.)
            checkDeadline();
            if (cut) cutLines++;
            const index = regex.firstMatch(text);
            if (index === -1) return true;
            const line = `${shownFile}:${n}: ${excerpt(text, index)}`;
            if (used + line.length + 1 > budget) {
              budgetHit = true;
              return false;
            }
            out.push(line);
            used += line.length + 1;
            return ++matches < maxMatches;
          };
          const result: LineReadResult = 'fd' in source ? readLinesSync(source.fd, options, onLine) : await readLines(source.handle, options, onLine);
          if (result.binary) {
            skippedBinary++;
            searched--;
          } else if (ctx.reads && matchedHere(out.length)) {
            // Evidence the answer may rest on: a file with matches, read whole. Read to its end, its
            // hash is of what was searched, with the stats from before the read (`opened`); cut short
            // (the match cap), the rest is read for the hash.
            if (hash && !result.stopped) ctx.reads.recordHashed(hash.digest('hex'), stats, shownFile);
            else if ('fd' in source) ctx.reads.recordSync(source.fd, fstatSync(source.fd), shownFile);
            else await ctx.reads.record(source.handle, await source.handle.stat(), shownFile);
          }
        } catch (error) {
          throwIfAborted(ctx.signal);
          if (error instanceof ToolError) throw error;
          unreadable++;
          searched--;
        }
      };

      try {
        if (!start.stats.isDirectory()) {
          // A single file is searched when the glob (if any) matches its name.
          if (!matchesGlob || matchesGlob(path.basename(startAbs))) await searchOne({ handle: start.handle }, start.stats, shownStart);
        } else {
          const skipFolder = (abs: string) => hiddenReason(hidden, abs, A_FOLDER) !== undefined;
          const walk = walkFiles(start.handle, startAbs, {
            signal: ctx.signal,
            toolName: NAME,
            skipDirs: IGNORED_DIRS,
            pseudoDevices,
            onTick: checkDeadline,
            skipFolder,
          });
          for await (const file of walk) {
            if (matches >= maxMatches || budgetHit) break;
            if (matchesGlob && !matchesGlob(file.rel || file.name)) continue;
            if (hiddenReason(hidden, file.abs, A_FILE) !== undefined) skippedHidden++;
            else await searchWalked(file);
          }
        }
      } finally {
        await start.handle.close();
      }

      async function searchWalked(file: WalkedFile): Promise<void> {
        // Small files: open, stat, read and close with blocking calls, beside the held folder;
        // other jobs on this thread (inline, shared) and its port get the loop between slices.
        while (sliceSpent() > SYNC_SLICE_MS) await nextTurn();
        const small = openWalkedFileSync(file, pseudoDevices);
        const opened = small === 'async' ? await openWalkedFile(file, pseudoDevices, { signal: ctx.signal, toolName: NAME }) : small;
        if (!opened) {
          unreadable++;
          return;
        }
        const source: Source = 'fd' in opened ? { fd: opened.fd } : { handle: opened.handle };
        try {
          // By inode too: a hard link to a hidden file, under another name, is skipped unread.
          if (hiddenReason(hidden, file.abs, opened.stats) !== undefined) skippedHidden++;
          else await searchOne(source, opened.stats, displayPath(ctx.workspaceRoot, file.abs));
        } finally {
          if ('fd' in opened) closeSync(opened.fd);
          else await opened.handle.close();
        }
      }

      const notes: string[] = [];
      if (matches >= maxMatches) notes.push(`[stopped at ${plural(maxMatches, 'match', 'matches')}; narrow the pattern, path or glob to see others]`);
      else if (budgetHit) notes.push(`[stopped after ${plural(matches, 'match', 'matches')}: output size limit reached; narrow the search]`);
      const skipped: string[] = [];
      if (skippedLarge) skipped.push(`${plural(skippedLarge, 'file')} over ${ctx.limits.grepMaxFileBytes} bytes`);
      if (skippedBinary) skipped.push(`${plural(skippedBinary, 'binary file')}`);
      if (unreadable) skipped.push(`${plural(unreadable, 'unreadable file')}`);
      // Said whatever the pattern: the answer is the same whether or not they would have matched.
      if (skippedHidden) skipped.push(`${plural(skippedHidden, 'file')} hidden from the tools (config, ledger or .env-style: not searched)`);
      if (skipped.length) notes.push(`[skipped ${skipped.join(', ')}]`);
      if (cutLines)
        notes.push(`[${plural(cutLines, 'line')} longer than ${regex.maxLineChars} characters: only the first ${regex.maxLineChars} of each were searched]`);
      if (out.length === 0) {
        const base = `No matches for /${args.pattern}/${args.ignore_case ? 'i' : ''} in ${shownStart}${args.glob ? ` (glob ${args.glob})` : ''}; searched ${plural(searched, 'file')}.`;
        return [base, ...notes].join('\n');
      }
      return capOutput(`${out.join('\n')}${notes.length ? `\n\n${notes.join('\n')}` : ''}`, ctx.limits);
    }),
};

/** Shows a long line around its match instead of only its start. */
function excerpt(text: string, index: number): string {
  if (text.length <= SHOWN_LINE_CHARS) return text;
  const from = index < SHOWN_LINE_CHARS / 2 ? 0 : Math.max(0, index - 60);
  const to = Math.min(text.length, from + SHOWN_LINE_CHARS);
  return `${from > 0 ? '…' : ''}${text.slice(from, to)}${to < text.length ? '…' : ''}`;
}
