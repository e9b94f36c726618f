/**
 * A job's transcript as terminal lines, for `forkpool jobs show` and the chat's job detail:
 *
 *   #3 model 1.2 s 812 tok → grep {"pattern":"retry"}
 *   #4 tool grep 0.1 s: 12 lines (head…tail)
 *
 * Every text in a step came from a model or a tool: escaped here (terminal-text.ts), one line
 * per line of it, so nothing in it can drive the terminal.
 */
import type { TranscriptStep } from '../ledger/transcript.js';
import { escapeForTerminal } from '../../shared/terminal-text.js';

export interface TranscriptLineOptions {
  /** Lines of a text or an output shown under its step (default 12; the rest counted). */
  maxBodyLines?: number;
  /** A line's characters before it is cut (default 200). */
  maxLineChars?: number;
  /** Indent of the text under a step (default 4 spaces). */
  indent?: string;
}

/** What capHeadTail leaves where it cut a text (text-budget.ts). */
const CUT_MARKER = /…\[\d+ characters omitted\]…/;

function duration(ms: number | undefined): string {
  return ms === undefined ? '' : ` ${(ms / 1000).toFixed(1)} s`;
}

function cutLine(text: string, max: number): string {
  const flat = escapeForTerminal(text);
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The head line of one step. */
export function stepHeadLine(step: TranscriptStep, maxChars = 200): string {
  if (step.kind === 'model') {
    const tokens = step.promptTokens + step.completionTokens;
    const calls = step.calls.map((c) => `${c.name} ${c.args.replace(/\s*\n\s*/g, ' ')}`).join(', ');
    const omitted = step.callsOmitted ? `${step.calls.length + step.callsOmitted} calls, ${step.callsOmitted} not kept: ` : '';
    const what = calls ? ` → ${omitted}${calls}` : step.text !== undefined ? ' (answer)' : '';
    return cutLine(`#${step.n} model${duration(step.ms)} ${tokens} tok${what}`, maxChars);
  }
  if (step.kind === 'tool') {
    const lines = step.output === '' ? 0 : step.output.split('\n').length;
    const cut = CUT_MARKER.test(step.output) ? ` (head…tail of ${step.chars} chars)` : '';
    return cutLine(`#${step.n} tool ${step.name}${duration(step.ms)}${step.ok ? '' : ' failed'}: ${lines} line${lines === 1 ? '' : 's'}${cut}`, maxChars);
  }
  return cutLine(`#${step.n} note: ${step.text}`, maxChars);
}

/** The text under a step: a model's words, a tool's output; at most `maxBodyLines` lines, the rest counted. */
export function stepBodyLines(step: TranscriptStep, options: TranscriptLineOptions = {}): string[] {
  const { maxBodyLines = 12, maxLineChars = 200, indent = '    ' } = options;
  const body = step.kind === 'model' ? (step.text ?? '') : step.kind === 'tool' ? step.output : '';
  if (body.trim() === '') return [];
  const lines = body.replace(/\r\n/g, '\n').split('\n');
  const shown = lines.slice(0, maxBodyLines).map((line) => indent + cutLine(line.replace(/\t/g, '  '), maxLineChars));
  if (lines.length > maxBodyLines) shown.push(`${indent}… ${lines.length - maxBodyLines} more line(s)`);
  return shown;
}

/**
 * A page of steps as lines: each step's head line, then its text; a gap in the numbers (steps
 * the cap left out) says so.
 */
export function transcriptLines(steps: readonly TranscriptStep[], options: TranscriptLineOptions = {}): string[] {
  const out: string[] = [];
  let previous: number | undefined;
  for (const step of steps) {
    if (previous !== undefined && step.n > previous + 1) out.push(`… ${step.n - previous - 1} step(s) left out (the transcript's cap)`);
    previous = step.n;
    out.push(stepHeadLine(step, options.maxLineChars), ...stepBodyLines(step, options));
  }
  return out;
}
