/**
 * The parent's turn as an `invoke_agent` span, with its loop's `chat` and `execute_tool` spans
 * (src/shared/tracing.ts). A job a tool call of the turn spawns is a child of that call's span:
 * {@link traceparentFor} gives the spawn its parent. Undefined when no provider records it.
 */
import { SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { LoopEvent, StopReason } from '../../shared/loop-events.js';
import type { SerializedError } from '../../shared/errors.js';
import type { UsageByModel } from '../../shared/usage.js';
import { redactSecrets } from '../../shared/tools/secrets.js';
import {
  FORKPOOL_ATTR,
  GEN_AI,
  LoopSpans,
  activeContext,
  captureContent,
  messagesAttribute,
  startAgentSpan,
  traceparentOf,
  usageAttributes,
} from '../../shared/tracing.js';

export interface TurnTraceStart {
  turn: number;
  followUp: boolean;
  /** The parent's role (its agent name in the span). */
  role: string;
  model: string;
  input: string;
  /** The secrets content is redacted of, when captured. */
  secrets: readonly string[];
}

export class TurnTrace {
  readonly #span: Span;
  readonly #loop: LoopSpans;
  readonly #capture: boolean;
  readonly #redact: (text: string) => string;

  private constructor(span: Span, loop: LoopSpans, capture: boolean, redact: (text: string) => string) {
    this.#span = span;
    this.#loop = loop;
    this.#capture = capture;
    this.#redact = redact;
  }

  /** Opens the turn's span under the host's active one; undefined (nothing more to do) with no provider. */
  static start(start: TurnTraceStart): TurnTrace | undefined {
    const parent = activeContext();
    const span = startAgentSpan(
      start.role,
      { [GEN_AI.requestModel]: start.model, [FORKPOOL_ATTR.turn]: start.turn, [FORKPOOL_ATTR.followUp]: start.followUp },
      parent,
    );
    if (!span) return undefined;
    const capture = captureContent();
    const redact = (text: string) => redactSecrets(text, start.secrets);
    if (capture) span.setAttribute(GEN_AI.inputMessages, messagesAttribute('user', redact(start.input)));
    return new TurnTrace(span, new LoopSpans(trace.setSpan(parent, span), { model: start.model, capture, redact }), capture, redact);
  }

  event(event: LoopEvent): void {
    this.#loop.event(event);
  }

  /** The traceparent for a job the call `callId` spawns: that call's span, else the turn's. */
  traceparentFor(callId: string | undefined): string | undefined {
    const context = callId === undefined ? undefined : this.#loop.toolContext(callId);
    const span = context === undefined ? this.#span : trace.getSpan(context);
    return span === undefined ? undefined : traceparentOf(span);
  }

  end(result: { stopReason: StopReason; answer: string; usage: UsageByModel; error?: SerializedError | undefined } | { thrown: unknown }): void {
    this.#loop.close();
    if ('thrown' in result) {
      this.#span.setStatus({ code: SpanStatusCode.ERROR, message: result.thrown instanceof Error ? result.thrown.name : 'error' });
    } else {
      this.#span.setAttributes({ [FORKPOOL_ATTR.stopReason]: result.stopReason, ...usageAttributes(result.usage) });
      if (this.#capture && result.answer) this.#span.setAttribute(GEN_AI.outputMessages, messagesAttribute('assistant', this.#redact(result.answer)));
      if (result.error) {
        this.#span.setAttribute(GEN_AI.errorType, result.error.code);
        this.#span.setStatus({ code: SpanStatusCode.ERROR, message: result.error.code });
      }
    }
    this.#span.end();
  }
}
