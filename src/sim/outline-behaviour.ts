/**
 * The plausible agent's use of `code_outline`: a task that asks to outline files ("Outline
 * src/pool.ts and src/queue.ts", or "Outline where the retry backoff is") gets outline calls
 * instead of a search-and-read. Pure: decides from the request's messages only.
 *
 *  - the task names JS/TS files → one `code_outline` call per file, all in one message;
 *  - it names none → the usual search first; the best JS/TS hit is then outlined, not read;
 *  - after the outlines → an answer listing what each file holds (or why it could not be outlined).
 */
import { toolCall, type SimReply } from './reply.js';

export const OUTLINE_TOOL = 'code_outline';
/** Files outlined in one message at most (a task that names more gets the first ones). */
const MAX_OUTLINE_CALLS = 100;
const SOURCE_PATH = /(?:[\w@.-]+\/)*[\w@-][\w@.-]*\.(?:ts|tsx|mts|cts|js|jsx|mjs|cjs)\b/g;

export interface OutlineCall {
  name: string;
  args: Record<string, unknown>;
  result: string | undefined;
}

/** The task asks for an outline and the tool is offered. */
export function wantsOutline(task: string, tools: ReadonlySet<string>): boolean {
  return tools.has(OUTLINE_TOOL) && /\boutlin(e|es|ing)\b/i.test(task);
}

/** JS/TS paths named in the task, in order, without duplicates. */
export function sourcePathsIn(task: string): string[] {
  return [...new Set(task.match(SOURCE_PATH) ?? [])].slice(0, MAX_OUTLINE_CALLS);
}

export function isOutlinable(path: string): boolean {
  return new RegExp(`^${SOURCE_PATH.source}$`).test(path);
}

/** The first step of an outline task that names its files: outline them all at once. */
export function outlineNamedFiles(paths: readonly string[], n: number): SimReply {
  return {
    content: `Outlining ${paths.length === 1 ? paths[0] : `${paths.length} files`}.`,
    toolCalls: paths.map((path, i) => toolCall(n, i, OUTLINE_TOOL, { path })),
  };
}

export function outlineOne(path: string, n: number): SimReply {
  return { content: null, toolCalls: [toolCall(n, 0, OUTLINE_TOOL, { path })] };
}

/**
 * The answer after outline calls: per file, its header line and its first symbols, or the
 * error. `withTag`: a background job's answer ends with the result tag.
 */
export function outlineAnswer(calls: readonly OutlineCall[], withTag: boolean): string {
  const outlines = calls.filter((c) => c.name === OUTLINE_TOOL);
  const lines: string[] = [];
  const done: string[] = [];
  let symbols = 0;
  for (const call of outlines) {
    const path = typeof call.args.path === 'string' ? call.args.path : '?';
    const result = call.result ?? '';
    if (/^\s*error\b/i.test(result) || result === '') {
      lines.push(`- ${path}: could not be outlined (${result.replace(/\s+/g, ' ').slice(0, 200) || 'no result'})`);
      continue;
    }
    done.push(path);
    const [header = '', ...rest] = result.split('\n');
    symbols += Number(/: (\d+) symbols?/.exec(header)?.[1] ?? 0);
    // Top-level symbols only (members are indented further), the first three.
    const top = rest
      .filter((l) => /^\s*\d+-\d+\s{2}\S/.test(l))
      .slice(0, 3)
      .map((l) => l.trim().replace(/\s{2,}/g, ' '));
    lines.push(`- ${header.trim()}${top.length > 0 ? `; first: ${top.join('; ')}` : ''}`);
  }
  const summary = `Outlined ${done.length} of ${outlines.length} files (${symbols} symbols in all).`;
  const out = [summary, ...lines];
  if (withTag) out.push(`<result status="${done.length === outlines.length ? 'ok' : 'partial'}" files_touched="${done.join(',')}"/>`);
  return out.join('\n');
}
