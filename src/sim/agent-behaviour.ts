/**
 * The default "plausible agent": a deterministic model that decides its next message from the
 * request's messages and offered tools. It never reads the disk itself; it reads the results of
 * the tool calls it made (run by the real tool loop against the real workspace).
 *
 *  (a) a `<background_results>` block in this turn's input → a synthesis naming each job;
 *  (b) a new user turn with several questions and the spawn tool → one spawn call per question;
 *  (c) results of its own spawn calls → "I started N background agents (…)";
 *  (d) otherwise research: find_files + grep, then read_file on the best hit, then a summary;
 *      a task that asks for an outline gets code_outline calls instead (outline-behaviour.ts).
 */
import { BACKGROUND_PROMPT_MARKER, BACKGROUND_RESULTS_CLOSE, BACKGROUND_RESULTS_OPEN, PRIMARY_PROMPT_MARKER } from '../shared/prompts.js';
import { escapeRegExp, firstSentence, keywordsOf, labelFor, splitQuestions } from './keywords.js';
import { paddedAnswer, simDirectives } from './directives.js';
import { isOutlinable, OUTLINE_TOOL, outlineAnswer, outlineNamedFiles, outlineOne, sourcePathsIn, wantsOutline } from './outline-behaviour.js';
import { messagesOf, textOf, toolCall, toolCallsOf, toolNamesOf, type SimReply, type WireMessage } from './reply.js';

export const SPAWN_TOOL = 'spawn_background_agent';
const TASK_SUFFIX = 'Answer from the files in the workspace.';
const READ_LIMIT = 60;

/** `researchSteps`: model calls of a research job (see `SimServerOptions.researchSteps`). */
export function plausibleReply(body: unknown, n: number, researchSteps = 3): SimReply {
  const messages = messagesOf(body);
  const tools = toolNamesOf(body);
  const lastUser = findLastIndex(messages, (m) => m.role === 'user');
  const last = messages.at(-1);
  if (lastUser < 0) return text('There is no question in this conversation for me to answer.');

  const block = backgroundBlock(messages, lastUser);
  if (block !== undefined) return synthesis(block, reportsIn(textOf(messages[lastUser]?.content)));

  const task = textOf(messages[lastUser]?.content);
  const agents = agentEnumOf(body);
  if (last?.role === 'user' && tools.has(SPAWN_TOOL)) {
    // "Delegate: <task>": hand the whole task to one child (nested jobs when depth allows).
    const delegated = /^\s*delegate:\s*([\s\S]+)$/i.exec(task)?.[1]?.trim();
    if (delegated)
      return {
        content: null,
        toolCalls: [toolCall(n, 0, SPAWN_TOOL, { task: delegated, label: labelFor(delegated.replace(/^(\s*delegate:\s*)+/i, ''), 'delegated task') })],
      };
    const questions = splitQuestions(task);
    if (questions.length >= 2) return spawnCalls(questions, n, agents);
  }
  if (last?.role === 'user' && tools.has('list_background_agents') && /\b(status|what is running|list (the )?(jobs|agents))\b/i.test(task)) {
    return { content: null, toolCalls: [toolCall(n, 0, 'list_background_agents', {})] };
  }
  if (last?.role === 'tool') {
    const started = spawnSummary(messages);
    if (started !== undefined) return text(started);
    const listed = listSummary(messages);
    if (listed !== undefined) return text(listed);
  }
  return research(messages, lastUser, task, tools, n, researchSteps);
}

/** The next message of a model that never stops calling tools (for loop and budget tests). */
export function endlessReply(body: unknown, n: number): SimReply {
  const messages = messagesOf(body);
  const k = messages.filter((m) => m.role === 'assistant' && toolCallsOf(m).length > 0).length;
  const paths = ['.', 'src', 'test', 'docs'];
  return { content: null, toolCalls: [toolCall(n, 0, 'list_dir', { path: paths[k % paths.length] ?? '.', attempt: k + 1 })] };
}

function text(content: string): SimReply {
  return { content, toolCalls: [] };
}

function findLastIndex<T>(items: readonly T[], test: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i] as T)) return i;
  return -1;
}

// ---------------------------------------------------------------- (a) background results

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
  if (jobs.length === 0) return text('Background results arrived, but I found no background agent in them.');
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
  return text([`Here is what the ${jobs.length} background ${noun} found:`, ...lines, ...alerts].join('\n'));
}

// ---------------------------------------------------------------- (b) and (c) spawning

/** The `agent` enum of the spawn tool, when peers are configured. */
function agentEnumOf(body: unknown): string[] {
  const tools = (body as { tools?: Array<{ function?: { name?: string; parameters?: { properties?: { agent?: { enum?: unknown } } } } }> })?.tools ?? [];
  const spawn = tools.find((t) => t.function?.name === SPAWN_TOOL);
  const values = spawn?.function?.parameters?.properties?.agent?.enum;
  return Array.isArray(values) ? values.filter((v): v is string => typeof v === 'string') : [];
}

/** A question that names a configured agent ("Scout: where is …") is given to that agent. */
function agentFor(question: string, agents: readonly string[]): string | undefined {
  return agents.find((name) => new RegExp(`\\b${escapeRegExp(name)}\\b`, 'i').test(question));
}

/** After list_background_agents: the list, in short. */
function listSummary(messages: readonly WireMessage[]): string | undefined {
  const assistant = findLastIndex(messages, (m) => m.role === 'assistant');
  const call = toolCallsOf(messages[assistant]).find((c) => c.name === 'list_background_agents');
  if (!call) return undefined;
  const result = resultsById(messages.slice(assistant + 1)).get(call.id) ?? '';
  return `Here is where the background work stands:\n${result}`;
}

function spawnCalls(questions: readonly string[], n: number, agents: readonly string[] = []): SimReply {
  const used = new Set<string>();
  const calls = questions.map((question, i) => {
    let label = labelFor(question, `question ${i + 1}`);
    // Labels name jobs to the user: keep them distinct.
    for (let k = 2; used.has(label); k++) label = `${labelFor(question, `question ${i + 1}`, 34)} (${k})`;
    used.add(label);
    const q = question.trim();
    const task = `${q}${/[.?!]$/.test(q) ? '' : '.'} ${TASK_SUFFIX}`;
    const agent = agentFor(q, agents);
    return toolCall(n, i, SPAWN_TOOL, agent ? { task, label, agent } : { task, label });
  });
  return { content: null, toolCalls: calls };
}

/** After the results of its own spawn calls: what it started. Undefined if the last calls were not spawns. */
function spawnSummary(messages: readonly WireMessage[]): string | undefined {
  const assistant = findLastIndex(messages, (m) => m.role === 'assistant');
  const spawns = toolCallsOf(messages[assistant]).filter((c) => c.name === SPAWN_TOOL);
  if (spawns.length === 0) return undefined;
  const results = resultsById(messages.slice(assistant + 1));
  const started: string[] = [];
  const failed: string[] = [];
  spawns.forEach((call, i) => {
    const args = parseObject(call.arguments);
    const label = typeof args.label === 'string' && args.label ? args.label : typeof args.task === 'string' ? args.task.slice(0, 40) : `job ${i + 1}`;
    const result = results.get(call.id);
    if (result !== undefined && isError(result)) failed.push(`${label} (${firstSentence(result, 120)})`);
    else started.push(label);
  });
  const noun = started.length === 1 ? 'agent' : 'agents';
  let out = `I started ${started.length} background ${noun} (${started.join(', ')}). I will report when they finish.`;
  if (failed.length > 0) out += ` ${failed.length} could not be started: ${failed.join('; ')}.`;
  return out;
}

// ---------------------------------------------------------------- (d) research

interface CallWithResult {
  name: string;
  args: Record<string, unknown>;
  result: string | undefined;
}

function research(messages: readonly WireMessage[], lastUser: number, rawTask: string, tools: Set<string>, n: number, researchSteps: number): SimReply {
  const directives = simDirectives(rawTask);
  const task = directives.task;
  const turn = messages.slice(lastUser + 1);
  const steps = turn.filter((m) => m.role === 'assistant' && toolCallsOf(m).length > 0).length;
  const results = resultsById(turn);
  const calls: CallWithResult[] = turn.flatMap((m) =>
    m.role === 'assistant' ? toolCallsOf(m).map((c) => ({ name: c.name, args: parseObject(c.arguments), result: results.get(c.id) })) : [],
  );
  if (directives.read !== undefined || directives.answerChars !== undefined) return directed(directives, calls, steps, tools, n, messages);
  const keywords = keywordsOf(task, 2);
  const withTag =
    !messages.some((m) => m.role === 'system' && textOf(m.content).includes(PRIMARY_PROMPT_MARKER)) ||
    messages.some((m) => m.role === 'system' && textOf(m.content).includes(BACKGROUND_PROMPT_MARKER));

  const outline = wantsOutline(task, tools);
  if (outline && calls.some((c) => c.name === OUTLINE_TOOL)) return text(outlineAnswer(calls, withTag));
  const named = outline ? sourcePathsIn(task) : [];
  if (steps === 0 && named.length > 0) return outlineNamedFiles(named, n);

  if (steps === 0 && keywords.length > 0) {
    const first = keywords[0] as string;
    const search = [];
    if (tools.has('find_files')) search.push(toolCall(n, search.length, 'find_files', { pattern: `**/*${first}*` }));
    if (tools.has('grep')) {
      search.push(toolCall(n, search.length, 'grep', { pattern: keywords.map(escapeRegExp).join('|'), ignore_case: true }));
    }
    // A background job says what it is about to do, as a model does: its first text turn (an
    // `agent_<name>(background: true)` call returns on it).
    const plan = withTag ? `Looking for ${keywords.join(', ')} in the workspace.` : null;
    if (search.length > 0) return { content: plan, toolCalls: search };
  }

  const found = parseSearch(calls);
  const best = bestPath(found);
  const alreadyRead = calls.some((c) => c.name === 'read_file');
  if (outline && steps === 1 && best !== undefined && isOutlinable(best)) return outlineOne(best, n);
  if (steps === 1 && best !== undefined && !alreadyRead && tools.has('read_file')) {
    const read = toolCall(n, 0, 'read_file', { path: best, limit: READ_LIMIT });
    const alert = tools.has('report_alert') ? deprecationAlert(calls) : undefined;
    return { content: null, toolCalls: alert ? [read, toolCall(n, 1, 'report_alert', alert)] : [read] };
  }
  // Extra steps (benchmarks): list directories until the job has made `researchSteps` calls.
  if (researchSteps > 3 && steps >= 1 && steps < researchSteps - 1 && tools.has('list_dir')) {
    // Two directories in turn, so no call repeats the one before it (the loop detector's rule).
    const dir = best?.includes('/') ? best.slice(0, best.lastIndexOf('/')) : './.';
    return { content: null, toolCalls: [toolCall(n, 0, 'list_dir', { path: steps % 2 === 0 ? '.' : dir })] };
  }
  return text(finalAnswer(keywords, found, best, calls, withTag));
}

/** A task with directives (see directives.ts): read the named file first, answer at the asked length. */
function directed(
  directives: ReturnType<typeof simDirectives>,
  calls: readonly CallWithResult[],
  steps: number,
  tools: Set<string>,
  n: number,
  messages: readonly WireMessage[],
): SimReply {
  if (directives.read !== undefined && steps === 0 && tools.has('read_file')) {
    return { content: null, toolCalls: [toolCall(n, 0, 'read_file', { path: directives.read })] };
  }
  const read = calls.find((c) => c.name === 'read_file');
  const head =
    directives.read === undefined
      ? `Answer to: ${directives.task.slice(0, 120)}`
      : `Read ${directives.read}: ${firstContentLine(read?.result ?? '') || '(nothing)'}`;
  const body = directives.answerChars === undefined ? head : paddedAnswer(head, directives.answerChars);
  const withTag = !messages.some((m) => m.role === 'system' && textOf(m.content).includes(PRIMARY_PROMPT_MARKER));
  return text(withTag ? `${body}\n<result status="ok" files_touched="${directives.read ?? ''}"/>` : body);
}

/** A search hit that says something is deprecated is worth telling the parent before the answer. */
function deprecationAlert(calls: readonly CallWithResult[]): { message: string; severity: 'warning' } | undefined {
  for (const call of calls) {
    if (call.name !== 'grep' || call.result === undefined || isError(call.result)) continue;
    // A question about deprecation is not one: only lines that state it.
    const line = call.result.split(/\r?\n/).find((l) => /^[^:]+:\d+:.*deprecated\b/i.test(l) && !l.includes('?') && SOURCE_FILE.test(l.split(':')[0] ?? ''));
    const hit = line === undefined ? undefined : /^([^:]+):(\d+):\s*(.*)$/.exec(line.trim());
    if (hit)
      return {
        message: `Heads-up: ${hit[1]}:${hit[2]} mentions a deprecation: "${(hit[3] ?? '').slice(0, 160)}". Check it before relying on that code.`,
        severity: 'warning',
      };
  }
  return undefined;
}

interface SearchFindings {
  /** Paths of grep matches, one entry per matching line. */
  grepHits: string[];
  /** Paths listed by find_files. */
  files: string[];
}

function parseSearch(calls: readonly CallWithResult[]): SearchFindings {
  const grepHits: string[] = [];
  const files: string[] = [];
  for (const call of calls) {
    if (call.result === undefined || isError(call.result)) continue;
    for (const raw of call.result.split(/\r?\n/)) {
      const line = raw.trim();
      if (call.name === 'grep') {
        const path = /^(.+?):(\d+):/.exec(line)?.[1];
        if (path) grepHits.push(path);
      } else if (call.name === 'find_files') {
        if (/^[^\s:()[\]]+$/.test(line) && /[./]/.test(line)) files.push(line);
      }
    }
  }
  return { grepHits, files };
}

/** The path with the most grep hits (first on a tie), else the first file found. */
/** Code files, which a research answer should cite before docs and data that merely mention the words. */
const SOURCE_FILE = /\.(?:ts|tsx|js|mjs|cjs|py|go|rs|java|c|cc|cpp|h|hpp|rb|cs|kt|swift|php|scala)$/;

function bestPath(found: SearchFindings): string | undefined {
  const counts = new Map<string, number>();
  const inSource = found.grepHits.filter((path) => SOURCE_FILE.test(path));
  for (const path of inSource.length > 0 ? inSource : found.grepHits) counts.set(path, (counts.get(path) ?? 0) + 1);
  let best: string | undefined;
  let bestCount = 0;
  for (const [path, count] of counts) {
    if (count > bestCount) {
      best = path;
      bestCount = count;
    }
  }
  return best ?? found.files[0];
}

function finalAnswer(keywords: readonly string[], found: SearchFindings, best: string | undefined, calls: readonly CallWithResult[], withTag: boolean): string {
  const kw = keywords.length > 0 ? keywords.join(', ') : '(no keywords)';
  const read = calls.filter((c) => c.name === 'read_file' && c.result !== undefined && !isError(c.result));
  const readPaths = [...new Set(read.map((c) => (typeof c.args.path === 'string' ? c.args.path : '')).filter((p) => p))];
  const lines: string[] = [];
  if (best === undefined) {
    lines.push(`Found no matching lines or files for ${kw}.`);
  } else {
    const files = new Set(found.grepHits).size;
    let summary = `Found ${found.grepHits.length} matching lines in ${files} files for ${kw}. Most relevant: ${best}.`;
    const firstLine = read.map((c) => firstContentLine(c.result ?? '')).find((l) => l);
    if (firstLine) summary += ` ${firstLine}`;
    lines.push(summary);
  }
  if (withTag) lines.push(`<result status="${best === undefined ? 'partial' : 'ok'}" files_touched="${readPaths.join(',')}"/>`);
  return lines.join('\n');
}

/** First non-empty line of a read_file result, without its line number. */
function firstContentLine(output: string): string {
  for (const raw of output.split(/\r?\n/)) {
    const line = raw.replace(/^\s*\d+\s*(?:[:|→\t]\s?|\s)/, '').trim();
    if (line) return line.length > 200 ? `${line.slice(0, 199)}…` : line;
  }
  return '';
}

// ---------------------------------------------------------------- helpers

function resultsById(messages: readonly WireMessage[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of messages) {
    if (m.role === 'tool' && typeof m.tool_call_id === 'string') out.set(m.tool_call_id, textOf(m.content));
  }
  return out;
}

/** A tool result that reports a failure counts as no result. */
function isError(result: string): boolean {
  return /^\s*error\b/i.test(result);
}

function parseObject(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
