/**
 * Each job's `invoke_agent` span, and under it the `chat` and `execute_tool` spans of its tool
 * loop, made on the main thread from the events its port carries (see src/shared/tracing.ts).
 * One owner: the engine calls {@link open} at booking, {@link progress} per event and
 * {@link ended} at its end. With no provider registered nothing is kept.
 */
import { SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { ForkpoolConfig } from '../../shared/config.js';
import type { LoopEvent } from '../../shared/loop-events.js';
import type { JobSpec } from '../../shared/protocol.js';
import { redactSecrets } from '../../shared/tools/secrets.js';
import { redactionSecrets } from '../../shared/tools/host-secrets.js';
import {
  FORKPOOL_ATTR,
  GEN_AI,
  LoopSpans,
  activeContext,
  captureContent,
  contextFromTraceparent,
  messagesAttribute,
  startAgentSpan,
  traceparentOf,
  usageAttributes,
} from '../../shared/tracing.js';
import type { JobRecord } from '../ledger/job-record.js';

interface TracedJob {
  span: Span;
  /** Undefined for a job run elsewhere (BullMQ): its worker makes those spans (docs/observability.md). */
  loop: LoopSpans | undefined;
}

export interface JobTracesOptions {
  config: ForkpoolConfig;
  /** Jobs run in another process, which traces their loops itself: only the job's span is made here. */
  remote: boolean;
}

export class JobTraces {
  readonly #options: JobTracesOptions;
  readonly #jobs = new Map<string, TracedJob>();

  constructor(options: JobTracesOptions) {
    this.#options = options;
  }

  /**
   * Opens a new job's span and returns its spec with the `traceparent` it carries. Its parent: the
   * spawn's own `traceparent` (the parent's tool call), else for a child the spawn call of the job
   * that asked for it, else the host's active span. No provider: the spec as it was.
   */
  open(spec: JobSpec, request: { traceparent?: string | undefined; wave?: number | null | undefined }, parentJobId: string | undefined): JobSpec {
    const parent =
      contextFromTraceparent(request.traceparent) ?? (parentJobId === undefined ? undefined : this.#spawnContextOf(parentJobId)) ?? activeContext();
    const agent = spec.agent ?? 'fork';
    const span = startAgentSpan(
      agent,
      {
        [GEN_AI.agentId]: spec.id,
        [GEN_AI.requestModel]: spec.model ?? spec.config.model,
        [FORKPOOL_ATTR.jobId]: spec.id,
        [FORKPOOL_ATTR.label]: spec.label,
        [FORKPOOL_ATTR.agent]: agent,
        [FORKPOOL_ATTR.depth]: spec.depth ?? 1,
        ...(request.wave !== undefined && request.wave !== null ? { [FORKPOOL_ATTR.wave]: request.wave } : {}),
      },
      parent,
    );
    if (!span) return request.traceparent === undefined ? spec : { ...spec, traceparent: request.traceparent };
    const capture = captureContent();
    const redact = capture ? redactor(this.#options.config) : (text: string) => text;
    if (capture) span.setAttribute(GEN_AI.inputMessages, messagesAttribute('user', redact(spec.task)));
    const loop = this.#options.remote ? undefined : new LoopSpans(trace.setSpan(parent, span), { model: spec.model ?? spec.config.model, capture, redact });
    this.#jobs.set(spec.id, { span, loop });
    const traceparent = traceparentOf(span);
    return traceparent === undefined ? spec : { ...spec, traceparent };
  }

  started(record: Readonly<JobRecord>): void {
    this.#jobs
      .get(record.id)
      ?.span.addEvent('started', { attempt: record.attempts, ...(record.threadId !== undefined ? { 'thread.id': record.threadId } : {}) });
  }

  progress(jobId: string, event: LoopEvent): void {
    this.#jobs.get(jobId)?.loop?.event(event);
  }

  /** Its ending: status, how it ended and where its result goes, its usage; the span ends. */
  ended(record: Readonly<JobRecord>): void {
    const traced = this.#jobs.get(record.id);
    if (!traced) return;
    this.#jobs.delete(record.id);
    traced.loop?.close();
    const { span } = traced;
    span.setAttributes({
      [FORKPOOL_ATTR.status]: record.status ?? record.state,
      [FORKPOOL_ATTR.delivery]: record.parentJobId !== undefined ? 'parent_job' : 'parent_turn',
      ...(record.endedBy !== undefined ? { [FORKPOOL_ATTR.endedBy]: record.endedBy } : {}),
      ...(record.stopReason !== undefined ? { [FORKPOOL_ATTR.stopReason]: record.stopReason } : {}),
      ...usageAttributes(record.usage),
    });
    if (record.error) {
      span.setAttribute(GEN_AI.errorType, record.error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: record.error.code });
    }
    if (captureContent() && record.resultText)
      span.setAttribute(GEN_AI.outputMessages, messagesAttribute('assistant', redactor(this.#options.config)(record.resultText)));
    span.end(record.endedAt);
  }

  /** The manager closed: spans of jobs that never ended (abandoned) end now, marked so. */
  closeAll(): void {
    for (const [id, traced] of this.#jobs) {
      traced.loop?.close();
      traced.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the manager closed before the job ended' });
      traced.span.end();
      this.#jobs.delete(id);
    }
  }

  /** A child's parent: the spawn call its parent job has open, else that job's own span. */
  #spawnContextOf(parentJobId: string): Context | undefined {
    const traced = this.#jobs.get(parentJobId);
    if (!traced) return undefined;
    return traced.loop?.openToolContext('spawn_background_agent') ?? trace.setSpan(activeContext(), traced.span);
  }
}

/** Content is redacted with every secret the config and the environment hold. */
function redactor(config: ForkpoolConfig): (text: string) => string {
  const secrets = redactionSecrets(config);
  return (text) => redactSecrets(text, secrets);
}
