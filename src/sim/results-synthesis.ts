/**
 * The plausible agent's answer to delivered background results (agent-behaviour.ts, case (a)):
 * a `<background_results>` block in this turn's input is read job by job — forkpool's
 * `[Background agent "…"]` headers or Remy's `<tool_result … name="…">` elements — and answered
 * with one line per job quoting what it found, then the alerts of a `[Background reports]` block.
 * Pure: decides from the request's messages only.
 */
import { BACKGROUND_RESULTS_CLOSE, BACKGROUND_RESULTS_OPEN } from '../shared/prompts.js';
import { firstSentence } from './keywords.js';
import { textOf, type SimReply, type WireMessage } from './reply.js';

/** The synthesis of the results this turn's input delivers; undefined when it delivers none. */
export function resultsSynthesis(messages: readonly WireMessage[], lastUser: number): SimReply | undefined {
  const block = backgroundBlock(messages, lastUser);
  return block === undefined ? undefined : synthesis(block, reportsIn(textOf(messages[lastUser]?.content)));
}

function answer(content: string): SimReply {
  return { content, toolCalls: [] };
}

/** The block's text, if this turn's input (the user message and any system text just before it) holds one. */
function backgroundBlock(messages: readonly WireMessage[], lastUser: number): string | undefined {
  let start = lastUser;
  while (start > 0 && messages[start - 1]?.role !== 'assistant' && messages[start - 1]?.role !== 'tool') start--;
  for (let i = lastUser; i >= start; i--) {
    // The system prompt may mention the tag while explaining it; only delivered input counts.
    if (messages[i]?.role !== 'user') continue;
    const content = textOf(messages[i]?.content);
    const open = content.indexOf(BACKGROUND_RESULTS_OPEN);
    if (open < 0) continue;
    const from = open + BACKGROUND_RESULTS_OPEN.length;
    const close = content.indexOf(BACKGROUND_RESULTS_CLOSE, from);
    return content.slice(from, close < 0 ? undefined : close);
  }
  return undefined;
}

/** Alerts in a `[Background reports]` block of this turn's input, one line each. */
function reportsIn(input: string): string[] {
  const at = input.indexOf('[Background reports]');
  if (at < 0) return [];
  const out: string[] = [];
  const lines = input.slice(at).split('\n').slice(1);
  for (let i = 0; i < lines.length; i++) {
    const head = /^- job (\S+) "([^"]*)" \((\w+)\):$/.exec(lines[i] ?? '');
    if (!head) continue;
    const body = /^\s*\| (.*)$/.exec(lines[i + 1] ?? '')?.[1] ?? '';
    out.push(`${head[2]} (${head[3]}): ${body.slice(0, 200)}`);
  }
  return out;
}

function synthesis(block: string, reports: readonly string[] = []): SimReply {
  // forkpool's header line, or Remy's `<tool_result … name="…">` element (its body the text itself;
  // a job that did not end ok has forkpool's header inside it: one job, not two).
  const header = /^[ \t]*(?:\[Background agent "([^"\n]*)"|<tool_result [^>\n]*name="([^"\n]*)">)[^\n]*$/gm;
  const jobs: Array<{ label: string; start: number; end: number; rest: string; element?: boolean }> = [];
  for (const match of block.matchAll(header)) {
    const line = match[0];
    const last = jobs.at(-1);
    if (match[2] === undefined && last?.element && block.slice(last.start, match.index).trim() === '') {
      last.start = (match.index ?? 0) + line.length;
      last.rest = line.slice(line.indexOf(']', line.indexOf('"', line.indexOf('"') + 1)) + 1);
      continue;
    }
    if (match[2] !== undefined) {
      if (last) last.end = match.index ?? 0;
      jobs.push({ label: match[2], start: (match.index ?? 0) + line.length, end: block.length, rest: '', element: true });
      continue;
    }
    const afterLabel = line.indexOf('"', line.indexOf('"') + 1);
    const bracket = line.indexOf(']', afterLabel);
    const start = match.index ?? 0;
    const previous = jobs.at(-1);
    if (previous) previous.end = start;
    jobs.push({ label: match[1] ?? '', start: start + line.length, end: block.length, rest: bracket < 0 ? '' : line.slice(bracket + 1) });
  }
  if (jobs.length === 0) return answer('Background results arrived, but I found no background agent in them.');
  const lines = jobs.map((job) => {
    // Job text is quoted line by line with "| " in the block; read it without the quoting.
    // A nested job's answer is itself a synthesis: quote what it found, not its opening line.
    const body = block
      .slice(job.start, job.end)
      .replace(/^[ \t]*\|[ \t]?/gm, '')
      .replace(/<\/tool_result>[\s\S]*$/, '')
      .replace(/^Here is what the \d+ background agents? found:\s*$/gm, '');
    // The first line of the job's answer (up to two sentences: what it found and where).
    const quote = firstSentence(`${job.rest}\n${body}`, 240, 2);
    return `- ${job.label}: ${quote ? `"${quote}"` : '(no result text)'}`;
  });
  const noun = jobs.length === 1 ? 'agent' : 'agents';
  const alerts = reports.length > 0 ? ['Alerts they raised:', ...reports.map((r) => `- ${r}`)] : [];
  return answer([`Here is what the ${jobs.length} background ${noun} found:`, ...lines, ...alerts].join('\n'));
}
