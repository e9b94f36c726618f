import type { ChatCompletionCreateParams, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { ForkpoolConfig } from './config.js';
import { AbortError, ForkpoolError, TimeoutError, serializeError, type SerializedError } from './errors.js';
import { LoopDetector } from './loop-detector.js';
import { callModel, clientSecrets, type ModelClient, type RateGate, type RetryEvent } from './model-call.js';
import { DEFAULTS, TRANSCRIPT_LIMITS } from './defaults.js';
import { linkedAbort, startDeadline } from './abort.js';
import { capHeadTail } from './text-budget.js';
import { toOpenAITool } from './tools/index.js';
import { redactError, redactSecrets } from './tools/secrets.js';
import type { ToolContext, ToolDefinition } from './tools/types.js';
import { addModelUsage, type Usage, type UsageByModel } from './usage.js';
import type { LoopEvent, StopReason } from './loop-events.js';
import type { BudgetMeter, BudgetName } from './budget.js';
import type { SlotSource } from './connection-slots.js';
import type { ToolHooks } from './hooks.js';
import { carriedFields } from './wires/history.js';
import { estimateJsonTokens } from './token-estimate.js';
import { estimateRequestTokens, type TokenRatios } from './token-ratio.js';
import { executeToolCall, mapWithLimit, runUnansweredCalls } from './tool-calls.js';

export { mapWithLimit, type LoopToolContext } from './tool-calls.js';

export type LoopConfig = Pick<
  ForkpoolConfig,
  | 'model'
  | 'temperature'
  | 'stream'
  | 'streamIdleTimeoutMs'
  | 'requestTimeoutMs'
  | 'turnTimeoutMs'
  | 'maxRetries'
  | 'maxIterations'
  | 'loopWarnAfter'
  | 'loopStopAfter'
  | 'toolLimits'
> &
  Partial<Pick<ForkpoolConfig, 'maxTokens' | 'firstByteTimeoutMs' | 'thinking'>>;

export interface ToolLoopOptions {
  client: ModelClient;
  config: LoopConfig;
  /** The history so far (system prompt, earlier turns, this turn's input). Not mutated. */
  messages: readonly ChatCompletionMessageParam[];
  tools: readonly ToolDefinition[];
  toolContext: Omit<ToolContext, 'signal'>;
  signal?: AbortSignal | undefined;
  rateGate?: RateGate | undefined;
  /** The thread's bounded connections to the model endpoint (see ConnectionSlots, connection-slots.ts). */
  connections?: SlotSource | undefined;
  onEvent?: ((event: LoopEvent) => void) | undefined;
  /**
   * Asked before every model call: text to add as a user message first (a job's children's
   * results, delivered at its next model call). Undefined: nothing to add.
   */
  beforeModelCall?: (() => string | undefined) | undefined;
  /**
   * Given each model call's own cancel before it is sent (a message sent to a job with
   * `interrupt` calls it; it cancels that call alone); returns what forgets it once the call is
   * over. Such a cancel is neither a failure nor a retry: the loop asks again, with what
   * {@link beforeModelCall} then adds. The cancelled call counts against the cap and the budget
   * (one model call; its prompt's tokens estimated from its characters). A callback rather than
   * a signal: a job waiting in its model call holds no AbortController of its own for it.
   */
  interruptCall?: ((interrupt: (reason: unknown) => void) => () => void) | undefined;
  /** Secrets besides the client's key to redact from tool results: every key the config holds (see `configuredSecrets`). */
  secrets?: readonly string[] | undefined;
  /**
   * Model calls this run may make; default `config.maxIterations` (the parent's per-turn cap),
   * then ITERATION_LIMIT. A job passes its budget's turns left: its budget then stops it first,
   * at the same count, as `budget_exceeded` on maxTurns after the wrap-up message.
   */
  maxModelCalls?: number | undefined;
  /** Sent with every model request: a typed job's json_schema (see typed-output.ts); only its final answer's content is bound. */
  responseFormat?: ChatCompletionCreateParams['response_format'] | undefined;
  /**
   * Asked after each batch of tool calls: the final answer to end the run with, when a
   * terminating tool was called (a typed job's `submit_result`). Undefined: the run goes on.
   */
  finishedBy?: (() => string | undefined) | undefined;
  /**
   * The run paused for approvals and goes on now: the unanswered calls of the last response in
   * `messages` run first, before any model call (see {@link ToolLoopResult.awaitingApproval}).
   */
  runPausedCalls?: boolean | undefined;
  /**
   * Asked after each batch of tool calls that paused none for approval: true when a call asked
   * the run to stop there (schedule_next_turn under `sleep`); it ends with {@link ToolLoopResult.asleep}.
   */
  sleepsAfter?: (() => boolean) | undefined;
  /** A job's budgets (see budget.ts): a wrap-up message once at 90%, a stop at 100%. */
  budget?: Pick<BudgetMeter, 'record' | 'exhausted' | 'wrapUp' | 'exceededMessage'> | undefined;
  /** PreToolUse and PostToolUse hooks (docs/tools.md "Hooks"); PreToolUse runs before the permission check. */
  hooks?: ToolHooks | undefined;
  /** Learns, from each reply's reported prompt tokens, how far the estimate of the request was off (token-ratio.ts). */
  tokenRatios?: Pick<TokenRatios, 'observe'> | undefined;
}

export interface ToolLoopResult {
  stopReason: StopReason;
  /** The final answer; for a run cut short, what it had found so far. */
  finalText: string;
  /** The whole history including this run's messages; every tool call has its response. */
  messages: ChatCompletionMessageParam[];
  usage: UsageByModel;
  iterations: number;
  error?: SerializedError;
  /** The budget that ran out (stop reason `budget_exceeded`). */
  budgetExceeded?: BudgetName;
  /**
   * The run paused (stop reason `aborted`): these calls of its last response wait for approvals
   * and have no result in `messages`; run it again with `messages` to run them first.
   */
  awaitingApproval?: string[];
  /** The run stopped to sleep ({@link ToolLoopOptions.sleepsAfter}; stop reason `aborted`): every call has its result. */
  asleep?: true;
}

/**
 * The one tool loop, shared by the parent agent and background jobs: model → tool calls →
 * results, until a final answer, the iteration cap, a detected loop, an abort or a model
 * failure. Ends with a typed reason rather than throwing.
 */
export async function runToolLoop(options: ToolLoopOptions): Promise<ToolLoopResult> {
  const { config, client } = options;
  const signal = options.signal ?? new AbortController().signal;
  const emit = options.onEvent ?? (() => {});
  const messages: ChatCompletionMessageParam[] = [...options.messages];
  // What this run said starts here: a run cut short reports its own findings, never an earlier
  // turn's answer from the history it was given.
  const runStart = messages.length;
  // A reply cut at max_tokens and continued once: its text so far (see continueCutReply).
  let cutText = '';
  let continued = false;
  const toolsByName = new Map(options.tools.map((t) => [t.name, t]));
  const apiTools: ChatCompletionTool[] = options.tools.map(toOpenAITool);
  const detector = new LoopDetector(config.loopWarnAfter, config.loopStopAfter);
  let usage: UsageByModel = {};
  let iterations = 0;
  const secrets = clientSecrets(client);
  const end = (stopReason: StopReason, finalText: string, error?: unknown): ToolLoopResult => ({
    stopReason,
    finalText,
    messages,
    usage,
    iterations,
    // An error's causes quote server bodies, which may echo the key; results are printed and logged.
    ...(error === undefined ? {} : { error: redactError(serializeError(error), secrets) }),
  });
  const budget = options.budget;
  const overBudget = (name: BudgetName): ToolLoopResult => ({
    ...end(
      'budget_exceeded',
      findingsSoFar(messages, runStart),
      new ForkpoolError('BUDGET_EXCEEDED', budget?.exceededMessage(name) ?? `budget ${name} exhausted`),
    ),
    budgetExceeded: name,
  });

  const maxModelCalls = options.maxModelCalls ?? config.maxIterations;
  // A run that paused for approvals goes on with its last response's unanswered calls first.
  const resumed = options.runPausedCalls ? await runUnansweredCalls(messages, toolsByName, options, signal, emit) : new Set<string>();
  if (resumed.size > 0) return { ...end('aborted', findingsSoFar(messages, runStart)), awaitingApproval: [...resumed] };
  // Its paused batch held schedule_next_turn too: with the approved calls run, that batch is done and it sleeps.
  if (options.runPausedCalls && options.sleepsAfter?.()) return { ...end('aborted', findingsSoFar(messages, runStart)), asleep: true };
  for (;;) {
    if (signal.aborted) return end('aborted', findingsSoFar(messages, runStart), new AbortError(signal.reason));
    // The budget before the cap: a job whose maxTurns is its cap ends on its budget, with what it found.
    const spentOut = budget?.exhausted();
    if (spentOut) return overBudget(spentOut);
    if (iterations >= maxModelCalls) {
      return end(
        'budget_exceeded',
        findingsSoFar(messages, runStart),
        new ForkpoolError('ITERATION_LIMIT', `iteration cap of ${maxModelCalls} model calls reached`),
      );
    }
    iterations++;
    const injected = options.beforeModelCall?.();
    if (injected) messages.push({ role: 'user', content: injected });
    const wrapUp = budget?.wrapUp();
    if (wrapUp) messages.push({ role: 'user', content: wrapUp });
    emit({ type: 'model_request', iteration: iterations });
    // One turn: this model call and the tools it calls, under `turnTimeoutMs` (0: no deadline).
    // Its expiry aborts both; a cancel of the whole run still reads as `aborted`.
    const turn = startDeadline(signal, config.turnTimeoutMs, () => turnTimeoutError(config.turnTimeoutMs));
    try {
      const call = options.interruptCall ? linkedAbort(turn.signal) : undefined;
      let interrupted = false;
      const forgetCall = options.interruptCall?.((reason) => {
        interrupted = true;
        call?.controller.abort(reason);
      });
      let reply;
      const callStarted = Date.now();
      try {
        reply = await callModel({
          client,
          config,
          params: { messages, tools: apiTools, ...(options.responseFormat ? { response_format: options.responseFormat } : {}) },
          signal: call?.signal ?? turn.signal,
          rateGate: options.rateGate,
          connections: options.connections,
          onRetry: (e: RetryEvent) => emit({ type: 'retry', ...e }),
        });
      } catch (error) {
        if (signal.aborted) return end('aborted', findingsSoFar(messages, runStart), error);
        if (turn.expired) return end('error', findingsSoFar(messages, runStart), turn.expired);
        // Only this call was cancelled, for a message: not a model request that failed. It still
        // counts as a model call against the cap and the budget, its prompt as tokens (estimated:
        // no usage came back), so a stream of interrupts cannot buy unmetered requests.
        if (interrupted) {
          const spent = interruptedUsage(messages);
          emit({ type: 'model_interrupted', iteration: iterations, usage: spent, model: config.model });
          usage = addModelUsage(usage, config.model, spent);
          budget?.record(config.model, spent);
          continue;
        }
        if (error instanceof AbortError) return end('aborted', findingsSoFar(messages, runStart), error);
        return end('error', findingsSoFar(messages, runStart), error);
      } finally {
        forgetCall?.();
        call?.dispose();
      }
      // Booked under the configured name, which prices and cost budgets know: a server names
      // its model its own way (llama-server a GGUF path, OpenAI a dated snapshot).
      usage = addModelUsage(usage, config.model, reply.usage);
      budget?.record(config.model, reply.usage);
      // `messages` is still what was sent: the reply is added below.
      if (options.tokenRatios && reply.usage.promptTokens > 0)
        options.tokenRatios.observe(config.model, estimateRequestTokens(messages, apiTools), reply.usage.promptTokens);
      emit({
        type: 'model_response',
        iteration: iterations,
        toolCalls: reply.toolCalls.length,
        usage: reply.usage,
        model: config.model,
        ...(reply.model && reply.model !== config.model ? { servedModel: reply.model } : {}),
        ms: Date.now() - callStarted,
        ...(reply.finishReason ? { finishReason: reply.finishReason } : {}),
      });
      if (reply.content && reply.content.trim()) {
        emit({
          type: 'assistant_text',
          iteration: iterations,
          text: capHeadTail(redactSecrets(reply.content, secrets), TRANSCRIPT_LIMITS.event.textChars),
          final: reply.toolCalls.length === 0,
        });
      }

      if (reply.toolCalls.length === 0) {
        messages.push({ role: 'assistant', content: reply.content, ...carriedFields(reply) });
        const text = cutText + reply.content;
        if (reply.finishReason !== 'length') return end('final', text);
        // Cut at max_tokens: asked once to go on; cut again (or no call left), the run ends
        // `truncated` with what it wrote, never passed off as a whole answer.
        if (!continued && iterations < maxModelCalls && !budget?.exhausted()) {
          continued = true;
          cutText = text;
          messages.push({ role: 'user', content: continueCutReply(config) });
          continue;
        }
        return end('truncated', text, cutReplyError(config));
      }
      cutText = '';
      continued = false;
      messages.push({ role: 'assistant', content: reply.content || null, tool_calls: reply.toolCalls, ...carriedFields(reply) });
      // A budget used up by this call: its tool calls are not run (their results would never be read).
      const exhausted = budget?.exhausted();
      if (exhausted) return overBudget(exhausted);

      // Past the per-response cap a call is not run and sends no event: each is answered with a tool
      // error (every call needs its answer), so the model learns to batch less.
      const runnable = reply.toolCalls.slice(0, maxCallsPerResponse(config));
      // Loop verdicts are taken in call order, before running, so a runaway batch is still answered.
      const verdicts = runnable.map((call) => detector.observe(call.function.name, safeParse(call.function.arguments)));
      // Calls in one message run concurrently, at most `maxParallelToolCalls` at once; each one's
      // result lands in its own slot, so the history keeps the model's order.
      const paused = new Set<string>();
      const results = await mapWithLimit(runnable, config.toolLimits.maxParallelToolCalls, (call) =>
        executeToolCall(call, toolsByName, options, turn.signal, emit, paused),
      );
      const overCap = tooManyCallsError(reply.toolCalls.length, runnable.length);
      reply.toolCalls.forEach((call, i) => {
        // A call that waits for an approval gets its result when the run goes on.
        if (paused.has(call.id)) return;
        let content = i < runnable.length ? (results[i] ?? 'Error: no result') : overCap;
        if (verdicts[i] === 'warn') {
          emit({ type: 'loop_warning', name: call.function.name, repeats: detector.repeats });
          content += `\n\n[forkpool] You have called ${call.function.name} with these same arguments ${detector.repeats} times in a row. Change approach or answer now.`;
        }
        messages.push({ role: 'tool', tool_call_id: call.id, content });
      });
      if (signal.aborted) return end('aborted', findingsSoFar(messages, runStart), new AbortError(signal.reason));
      // A typed job that submitted its result is done; calls still waiting for a person are moot.
      const finished = options.finishedBy?.();
      if (finished !== undefined) return end('final', finished);
      if (paused.size > 0) return { ...end('aborted', findingsSoFar(messages, runStart)), awaitingApproval: [...paused] };
      if (options.sleepsAfter?.()) return { ...end('aborted', findingsSoFar(messages, runStart)), asleep: true };
      // Its tools were aborted and answered with errors (every call has its result); the run ends here.
      if (turn.expired) return end('error', findingsSoFar(messages, runStart), turn.expired);
      if (verdicts.includes('stop')) {
        return end(
          'loop_detected',
          findingsSoFar(messages, runStart),
          new ForkpoolError('LOOP_DETECTED', `loop detected: the same tool call was repeated ${config.loopStopAfter} times`),
        );
      }
    } finally {
      turn.dispose();
    }
  }
}

/** The model's reply hit `max_tokens`: the request's bound, or the server's own. */
function cutReplyError(config: LoopConfig): ForkpoolError {
  const limit = config.maxTokens ?? DEFAULTS.maxTokens;
  return new ForkpoolError(
    'MODEL_OUTPUT_TRUNCATED',
    `the model's reply was cut at the token limit (finish_reason "length"; maxTokens ${limit}): the text is incomplete. Raise maxTokens, or ask for a shorter answer`,
  );
}

/** The one continuation turn after a reply cut at the token limit. */
function continueCutReply(config: LoopConfig): string {
  return `[forkpool] Your reply was cut off at the token limit (${config.maxTokens ?? DEFAULTS.maxTokens} tokens). Continue exactly where it stopped, without repeating anything, and finish briefly.`;
}

/** An interrupted call's usage: one request, its prompt's tokens estimated from its text (token-estimate.ts). */
function interruptedUsage(messages: readonly ChatCompletionMessageParam[]): Usage {
  const promptTokens = estimateJsonTokens(messages);
  return { promptTokens, completionTokens: 0, totalTokens: promptTokens, requests: 1 };
}

/** `toolLimits.maxToolCallsPerResponse`; a config built by hand without it gets the default. */
function maxCallsPerResponse(config: LoopConfig): number {
  const cap = config.toolLimits.maxToolCallsPerResponse;
  return Number.isInteger(cap) && cap >= 1 ? cap : DEFAULTS.tools.maxToolCallsPerResponse;
}

/** The answer to each call past the cap (one string, shared by all of them). */
function tooManyCallsError(made: number, ran: number): string {
  return `Error: not run: this response made ${made} tool calls and at most ${ran} run per response (toolLimits.maxToolCallsPerResponse). Make the call again in a later response if it is still needed.`;
}

function turnTimeoutError(timeoutMs: number): TimeoutError {
  return new TimeoutError('TURN_TIMEOUT', `turn timed out after ${timeoutMs} ms (a model call and the tools it called; turnTimeoutMs)`, timeoutMs);
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** For a run cut short: the last thing the model said in this run (from `runStart`), and which tools it had used. */
function findingsSoFar(messages: readonly ChatCompletionMessageParam[], runStart: number): string {
  const said: string[] = [];
  const used: string[] = [];
  for (const m of messages.slice(runStart)) {
    if (m.role !== 'assistant') continue;
    if (typeof m.content === 'string' && m.content.trim()) said.push(m.content.trim());
    for (const c of m.tool_calls ?? []) if (c.type === 'function') used.push(`${c.function.name}(${c.function.arguments.slice(0, 80)})`);
  }
  const parts: string[] = [];
  if (said.length) parts.push(said[said.length - 1] as string);
  if (used.length) parts.push(`Tool calls made before stopping (${used.length}): ${used.slice(-10).join('; ')}`);
  return parts.join('\n\n');
}
