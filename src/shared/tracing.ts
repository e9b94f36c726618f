/**
 * OpenTelemetry spans in the GenAI semantic conventions, over `@opentelemetry/api` alone: a host
 * registers its own provider and forkpool's spans join its traces; with none registered, the
 * only cost is one no-op check per turn or job ({@link startAgentSpan} returns undefined).
 *
 * Spans are made where the events are heard, on the main thread: a job's tool loop already sends
 * every model call and tool call over its port as a {@link LoopEvent}, so {@link LoopSpans} turns
 * those into `chat` and `execute_tool` spans under the job's `invoke_agent` span. A worker thread
 * loads no tracing code (see docs/observability.md "Why spans are made on the main thread").
 *
 * Attribute names are copied from the conventions (the incubating entry is not imported).
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  isSpanContextValid,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { LoopEvent } from './loop-events.js';
import { TRACEPARENT_PATTERN } from './trace-context.js';
import type { Usage, UsageByModel } from './usage.js';

export { TRACEPARENT_PATTERN };

/** The instrumentation scope of every forkpool span. */
export const TRACER_NAME = 'forkpool';

/** The GenAI semantic conventions' attribute names forkpool sets. */
export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  agentName: 'gen_ai.agent.name',
  agentId: 'gen_ai.agent.id',
  conversationId: 'gen_ai.conversation.id',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  // Content, only when captured (see captureContent).
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  errorType: 'error.type',
} as const;

/** forkpool's own attributes. */
export const FORKPOOL_ATTR = {
  jobId: 'forkpool.job.id',
  label: 'forkpool.job.label',
  agent: 'forkpool.job.agent',
  status: 'forkpool.job.status',
  delivery: 'forkpool.job.delivery',
  depth: 'forkpool.job.depth',
  wave: 'forkpool.job.wave',
  endedBy: 'forkpool.job.ended_by',
  stopReason: 'forkpool.stop_reason',
  turn: 'forkpool.turn',
  followUp: 'forkpool.turn.follow_up',
  worker: 'forkpool.worker.name',
  run: 'forkpool.job.run',
  outputChars: 'forkpool.tool.output_chars',
} as const;

/** The conventions' switch for message contents (off by default). */
export const CAPTURE_CONTENT_ENV = 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT';

/** True when the environment opts in to message contents on spans (they are then redacted). */
export function captureContent(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[CAPTURE_CONTENT_ENV]?.trim().toLowerCase() === 'true';
}

export function forkpoolTracer() {
  return trace.getTracer(TRACER_NAME);
}

/** The `traceparent` header of a span's context (undefined for an invalid one). */
export function traceparentOf(span: Span): string | undefined {
  const sc = span.spanContext();
  if (!isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A context whose parent is the span a `traceparent` names (remote); ROOT for a malformed one. */
export function contextFromTraceparent(traceparent: string | undefined): Context | undefined {
  if (traceparent === undefined || !TRACEPARENT_PATTERN.test(traceparent)) return undefined;
  const [, traceId, spanId, flags] = traceparent.split('-') as [string, string, string, string];
  const spanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : undefined;
}

/** The host's active context (its request span, when its context manager tracks one). */
export function activeContext(): Context {
  return context.active();
}

/**
 * Starts an `invoke_agent` span (a parent's turn, a job, a worker's run of a job). Undefined when
 * no provider records it: the caller then makes no other span (the no-op check).
 */
export function startAgentSpan(name: string, attributes: Attributes, parent: Context, spanName = `invoke_agent ${name}`): Span | undefined {
  const span = forkpoolTracer().startSpan(
    spanName,
    { kind: SpanKind.INTERNAL, attributes: { [GEN_AI.operation]: 'invoke_agent', [GEN_AI.agentName]: name, ...attributes } },
    parent,
  );
  if (span.isRecording()) return span;
  span.end();
  return undefined;
}

/** Input and output token totals over every model. */
export function usageAttributes(usage: UsageByModel): Attributes {
  let input = 0;
  let output = 0;
  for (const u of Object.values(usage)) {
    input += u.promptTokens;
    output += u.completionTokens;
  }
  return { [GEN_AI.inputTokens]: input, [GEN_AI.outputTokens]: output };
}

/** One text message in the conventions' message shape, as a JSON attribute value. */
export function messagesAttribute(role: 'user' | 'assistant', text: string): string {
  return JSON.stringify([{ role, parts: [{ type: 'text', content: text }] }]);
}

export interface LoopSpansOptions {
  /** The model the loop asks for (a response may name another). */
  model: string;
  /** Record message contents (see captureContent). */
  capture: boolean;
  /** Applied to every content value before it is set (the secrets of the loop's config). */
  redact: (text: string) => string;
}

/**
 * Turns one tool loop's events into `chat` and `execute_tool` spans, children of the agent span
 * in `parent`. Fed in event order (the parent's loop on this thread, a job's over its port).
 */
export class LoopSpans {
  readonly #parent: Context;
  readonly #options: LoopSpansOptions;
  #chat: Span | undefined;
  /** A chat span whose response came: ended at the next event, so the text that follows it can be added. */
  #answered: { span: Span; at: number } | undefined;
  /** Open tool spans by call id, in start order. */
  readonly #tools = new Map<string, { span: Span; name: string }>();

  constructor(parent: Context, options: LoopSpansOptions) {
    this.#parent = parent;
    this.#options = options;
  }

  /**
   * Never throws: a job's events are checked for their type only where they enter (protocol.ts),
   * and a span must not break the job's books.
   */
  event(event: LoopEvent, at = Date.now()): void {
    try {
      this.#onEvent(event, at);
    } catch {
      // A malformed event makes no span; the job goes on.
    }
  }

  #onEvent(event: LoopEvent, at: number): void {
    if (event.type === 'assistant_text') {
      if (this.#answered && this.#options.capture)
        this.#answered.span.setAttribute(GEN_AI.outputMessages, messagesAttribute('assistant', this.#options.redact(event.text)));
      return;
    }
    this.#endAnswered();
    switch (event.type) {
      case 'model_request':
        this.#chat?.end(at);
        this.#chat = forkpoolTracer().startSpan(
          `chat ${this.#options.model}`,
          {
            kind: SpanKind.CLIENT,
            startTime: at,
            attributes: { [GEN_AI.operation]: 'chat', [GEN_AI.requestModel]: this.#options.model, 'forkpool.iteration': event.iteration },
          },
          this.#parent,
        );
        return;
      case 'retry':
        this.#chat?.addEvent('retry', { attempt: event.attempt, delay_ms: event.delayMs, reason: event.reason }, at);
        return;
      case 'model_response': {
        const span = this.#chat;
        if (!span) return;
        this.#chat = undefined;
        span.setAttributes(tokenAttributes(event.usage));
        if (typeof event.model === 'string') span.setAttribute(GEN_AI.responseModel, event.model);
        if (typeof event.finishReason === 'string') span.setAttribute(GEN_AI.finishReasons, [event.finishReason]);
        this.#answered = { span, at };
        return;
      }
      case 'model_interrupted':
        this.#chat?.setAttribute('forkpool.interrupted', true);
        this.#chat?.end(at);
        this.#chat = undefined;
        return;
      case 'tool_call': {
        const attributes: Attributes = {
          [GEN_AI.operation]: 'execute_tool',
          [GEN_AI.toolName]: event.name,
          [GEN_AI.toolCallId]: event.callId,
          [GEN_AI.toolType]: 'function',
        };
        if (this.#options.capture && typeof event.args === 'string') attributes[GEN_AI.toolArguments] = this.#options.redact(event.args);
        const span = forkpoolTracer().startSpan(`execute_tool ${event.name}`, { kind: SpanKind.INTERNAL, startTime: at, attributes }, this.#parent);
        this.#tools.set(event.callId, { span, name: event.name });
        return;
      }
      case 'tool_result': {
        const open = this.#tools.get(event.callId);
        if (!open) return;
        this.#tools.delete(event.callId);
        open.span.setAttribute(FORKPOOL_ATTR.outputChars, event.chars);
        if (this.#options.capture && typeof event.output === 'string') open.span.setAttribute(GEN_AI.toolResult, this.#options.redact(event.output));
        if (!event.ok) open.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the tool call failed (its error went back to the model)' });
        open.span.end(at);
        return;
      }
      default:
        return;
    }
  }

  /**
   * The context of the newest open tool call named `name` (a job's spawn call, for its child:
   * its `spawn` message follows its `tool_call` event on the same port, so the newest is the one).
   */
  openToolContext(name: string): Context | undefined {
    let newest: Span | undefined;
    for (const open of this.#tools.values()) if (open.name === name) newest = open.span;
    return newest ? trace.setSpan(this.#parent, newest) : undefined;
  }

  /** The context of the open tool call `callId` (the parent's spawn call, for the job it starts). */
  toolContext(callId: string): Context | undefined {
    const open = this.#tools.get(callId);
    return open ? trace.setSpan(this.#parent, open.span) : undefined;
  }

  /** Ends what is still open (a run cut short: its last call never answered). */
  close(at = Date.now()): void {
    this.#endAnswered();
    this.#chat?.setStatus({ code: SpanStatusCode.ERROR, message: 'no response: the run ended first' });
    this.#chat?.end(at);
    this.#chat = undefined;
    for (const open of this.#tools.values()) {
      open.span.setStatus({ code: SpanStatusCode.ERROR, message: 'not answered: the run ended first' });
      open.span.end(at);
    }
    this.#tools.clear();
  }

  #endAnswered(): void {
    if (!this.#answered) return;
    this.#answered.span.end(this.#answered.at);
    this.#answered = undefined;
  }
}

/** A worker's event is checked for its type only (protocol.ts): its usage is read defensively. */
function tokenAttributes(usage: Usage | undefined): Attributes {
  const input = usage?.promptTokens;
  const output = usage?.completionTokens;
  return {
    ...(typeof input === 'number' ? { [GEN_AI.inputTokens]: input } : {}),
    ...(typeof output === 'number' ? { [GEN_AI.outputTokens]: output } : {}),
  };
}
