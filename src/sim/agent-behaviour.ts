/**
 * The default "plausible agent": a deterministic model that decides its next message from the
 * request's messages and offered tools. It never reads the disk itself; it reads the results of
 * the tool calls it made (run by the real tool loop against the real workspace).
 *
 *  (a) a `<background_results>` block in this turn's input → a synthesis naming each job
 *      (results-synthesis.ts);
 *  (b) a new user turn with several questions and the spawn tool → one spawn call per question;
 *  (c) results of its own spawn calls → "I started N background agents (…)";
 *  (d) otherwise research: find_files + grep, then read_file on the best hit, then a summary;
 *      a task that asks for an outline gets code_outline calls instead (outline-behaviour.ts).
 */
import { BACKGROUND_PROMPT_MARKER, PRIMARY_PROMPT_MARKER } from '../shared/prompts.js';
import { escapeRegExp, firstSentence, keywordsOf, labelFor, splitQuestions } from './keywords.js';
import { resultsSynthesis } from './results-synthesis.js';
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

  const synthesis = resultsSynthesis(messages, lastUser);
  if (synthesis !== undefined) return synthesis;

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
