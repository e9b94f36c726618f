import type { ChatCompletionMessageParam, ChatCompletionMessageFunctionToolCall } from 'openai/resources/chat/completions';
import { z } from 'zod';
import type { ForkpoolConfig } from './config.js';
import { AbortError, TimeoutError, ToolError, errorMessage } from './errors.js';
import { clientSecrets, type ModelClient } from './model-call.js';
import { TIMINGS, TRANSCRIPT_LIMITS } from './defaults.js';
import { withTimeout } from './abort.js';
import { COMMAND_OUTPUT_HEAD_SHARE, capHeadTail } from './text-budget.js';
import { redactToolOutput } from './tools/secrets.js';
import type { ToolContext, ToolDefinition } from './tools/types.js';
import type { LoopEvent } from './loop-events.js';
import { afterToolHook, beforeToolHook, type HookNotes } from './tool-hooks.js';
import type { ToolHooks } from './hooks.js';
import { ApprovalPending } from './approvals.js';

// One batch of a response's tool calls, for the tool loop (tool-loop.ts): each call parsed,
// hooked, permission-checked, timed and redacted into the result the model reads; at most
// `maxParallelToolCalls` at once; a run paused for approvals resumed with its unanswered calls.

/** The context the loop hands a tool: a {@link ToolContext} plus the id of the call being run. */
export interface LoopToolContext extends ToolContext {
  /** The model's tool call id (a tool that starts a job tags the job's events with it). */
  callId: string;
}

/** What running a tool call needs of the loop's options (tool-loop.ts's `ToolLoopOptions` is one). */
export interface ToolCallOptions {
  client: ModelClient;
  config: Pick<ForkpoolConfig, 'toolLimits'>;
  tools: readonly ToolDefinition[];
  toolContext: Omit<ToolContext, 'signal'>;
  /** Secrets besides the client's key to redact from tool arguments and results. */
  secrets?: readonly string[] | undefined;
  hooks?: ToolHooks | undefined;
}

/** Whether this call starts a background job (its `tool_call` event's `background`); unparsable arguments: no. */
function startsInBackground(tool: ToolDefinition | undefined, rawArgs: string): boolean {
  const flag = tool?.background;
  if (typeof flag !== 'function') return flag === true;
  try {
    return flag(JSON.parse(rawArgs || '{}'));
  } catch {
    return false;
  }
}

/** Runs one call; every failure becomes an `Error: …` result the model can read and adapt to. */
export async function executeToolCall(
  call: ChatCompletionMessageFunctionToolCall,
  toolsByName: ReadonlyMap<string, ToolDefinition>,
  options: ToolCallOptions,
  signal: AbortSignal,
  emit: (event: LoopEvent) => void,
  paused?: Set<string>,
): Promise<string> {
  const name = call.function.name;
  const started = Date.now();
  const background = startsInBackground(toolsByName.get(name), call.function.arguments) ? { background: true as const } : {};
  // The model wrote these arguments, but it may have read a secret somewhere: redacted like a result.
  const secrets = [...clientSecrets(options.client), ...(options.secrets ?? [])];
  const args = capHeadTail(redactToolOutput(call.function.arguments, secrets), TRANSCRIPT_LIMITS.event.argsChars);
  emit({ type: 'tool_call', callId: call.id, name, argsPreview: args.slice(0, 200), args, ...background });
  let ok = false;
  let output: string;
  const notes: HookNotes = { context: [], problems: [] };
  try {
    // A call still waiting for a slot when the run is aborted never starts (no process, no write).
    if (signal.aborted) throw new AbortError(signal.reason);
    output = await runTool(call, toolsByName.get(name), options, signal, notes);
    ok = true;
  } catch (error) {
    // Not run, not answered: the run pauses after this batch (approvals.ts).
    if (error instanceof ApprovalPending && paused) {
      paused.add(call.id);
      return '';
    }
    output = `Error: ${errorMessage(error)}`;
  }
  if (ok) await afterToolHook(options.hooks, { name, callId: call.id, input: notes.input, response: output }, signal, notes);
  output = [output, ...notes.context].join('\n\n');
  for (const message of notes.problems) emit({ type: 'hook_error', event: message.event, message: message.text });
  // A tool's environment has no key, but a command can still read it elsewhere (a file, the host
  // process's /proc/<pid>/environ): the model, and every output after it, must not see it.
  // Pieces, reversed, base64 and hex forms too (a second line: the files holding keys are hidden).
  output = capHeadTail(redactToolOutput(output, secrets), options.config.toolLimits.outputMaxChars);
  emit({
    type: 'tool_result',
    callId: call.id,
    name,
    ok,
    chars: output.length,
    ms: Date.now() - started,
    output: capHeadTail(output, TRANSCRIPT_LIMITS.event.outputChars, COMMAND_OUTPUT_HEAD_SHARE),
  });
  return output;
}

async function runTool(
  call: ChatCompletionMessageFunctionToolCall,
  tool: ToolDefinition | undefined,
  options: ToolCallOptions,
  signal: AbortSignal,
  notes: HookNotes,
): Promise<string> {
  const name = call.function.name;
  if (!tool) {
    const known = options.tools.map((t) => t.name).join(', ');
    throw new ToolError('TOOL_UNKNOWN', name, `unknown tool "${name}". Available tools: ${known || 'none'}.`);
  }
  let raw: unknown;
  try {
    raw = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
  } catch {
    throw new ToolError('TOOL_ARGUMENTS_INVALID', name, `arguments for ${name} are not valid JSON: ${call.function.arguments.slice(0, 200)}`);
  }
  // A separate step before validation and the permission check: a hook may block or rewrite the call.
  raw = await beforeToolHook(options.hooks, { name, callId: call.id, input: raw }, signal, notes);
  const parsed = tool.parameters.safeParse(raw);
  if (!parsed.success) {
    throw new ToolError('TOOL_ARGUMENTS_INVALID', name, `invalid arguments for ${name}: ${z.prettifyError(parsed.error)}`);
  }
  const args: unknown = parsed.data;
  notes.input = args;
  if (tool.gated) {
    const summary = tool.describeCall?.(args) ?? name;
    const allowed = await options.toolContext.permissions.check({ tool: name, summary, callId: call.id, args: call.function.arguments });
    if (!allowed) {
      throw new ToolError(
        'PERMISSION_DENIED',
        name,
        `permission denied: "${name}" is not granted in this session (${summary}). Do without it, or say that it is needed.`,
      );
    }
  }
  const timeoutMs = tool.timeoutMs ?? options.config.toolLimits.toolTimeoutMs;
  return withTimeout(
    (toolSignal, untimedWait) => {
      const context: LoopToolContext = { ...options.toolContext, signal: toolSignal, untimedWait, callId: call.id };
      return tool.run(args, context);
    },
    timeoutMs,
    signal,
    () => new TimeoutError('TOOL_TIMEOUT', `tool ${name} timed out after ${timeoutMs} ms`, timeoutMs),
    // A search admitted on a thread busy starting thousands of jobs waits for its loop, not for the disk.
    { tickMs: TIMINGS.toolTimeoutTickMs, minShare: TIMINGS.toolTimeoutMinShare },
  );
}

/**
 * A run that paused for approvals ends with its last response's calls partly answered: runs
 * the unanswered ones (the approved call, and any that were still running when it paused),
 * adds their results in the response's order, and returns those that wait again.
 */
export async function runUnansweredCalls(
  messages: ChatCompletionMessageParam[],
  toolsByName: ReadonlyMap<string, ToolDefinition>,
  options: ToolCallOptions,
  signal: AbortSignal,
  emit: (event: LoopEvent) => void,
): Promise<Set<string>> {
  const at = messages.findLastIndex((m) => m.role === 'assistant');
  const last = messages[at];
  const paused = new Set<string>();
  if (!last || last.role !== 'assistant' || !last.tool_calls?.length) return paused;
  const answered = new Set(messages.slice(at + 1).flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : [])));
  const calls = last.tool_calls.filter((c): c is ChatCompletionMessageFunctionToolCall => c.type === 'function' && !answered.has(c.id));
  if (calls.length === 0) return paused;
  const results = await mapWithLimit(calls, options.config.toolLimits.maxParallelToolCalls, (call) =>
    executeToolCall(call, toolsByName, options, signal, emit, paused),
  );
  calls.forEach((call, i) => {
    if (!paused.has(call.id)) messages.push({ role: 'tool', tool_call_id: call.id, content: results[i] ?? 'Error: no result' });
  });
  // In the response's order, as a run that never paused has them.
  const order = new Map(last.tool_calls.map((c, i) => [c.id, i]));
  const answers = messages.splice(at + 1).sort((a, b) => (order.get(toolCallId(a)) ?? 0) - (order.get(toolCallId(b)) ?? 0));
  messages.push(...answers);
  return paused;
}

function toolCallId(message: ChatCompletionMessageParam): string {
  return message.role === 'tool' ? message.tool_call_id : '';
}

/**
 * `Promise.all(items.map(run))` with at most `limit` runs in flight: a new one starts as soon as
 * one ends, in item order. `run` never rejects here (tool failures are results).
 */
export async function mapWithLimit<T, R>(items: readonly T[], limit: number, run: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await run(items[index] as T, index);
    }
  };
  // A config built by hand may lack the limit: then everything runs at once, as before it existed.
  const lanes = Number.isInteger(limit) && limit >= 1 ? Math.min(limit, items.length) : items.length;
  await Promise.all(Array.from({ length: lanes }, lane));
  return results;
}
