/**
 * A BullMQ worker's run of a job as a span in the job's own trace: its parent is the
 * `traceparent` the job carries (the producer's `invoke_agent` span of the job), and under it
 * the run's `chat` and `execute_tool` spans, from this machine's attempt (src/shared/tracing.ts).
 * The producer makes only the job's span for a remote job, so nothing is counted twice.
 */
import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { JobSpec } from '../../shared/protocol.js';
import type { LoopEvent } from '../../shared/loop-events.js';
import { redactSecrets } from '../../shared/tools/secrets.js';
import { redactionSecrets } from '../../shared/tools/host-secrets.js';
import { FORKPOOL_ATTR, LoopSpans, activeContext, captureContent, contextFromTraceparent, forkpoolTracer, usageAttributes } from '../../shared/tracing.js';
import type { AttemptEnd } from '../executors/attempt.js';

export class RunTrace {
  readonly #span: Span;
  readonly #loop: LoopSpans;

  private constructor(span: Span, loop: LoopSpans) {
    this.#span = span;
    this.#loop = loop;
  }

  /** Undefined when no provider records it (the no-op check). */
  static start(spec: JobSpec, at: { worker: string; bullId: string; run: number }): RunTrace | undefined {
    const parent = contextFromTraceparent(spec.traceparent) ?? activeContext();
    const span = forkpoolTracer().startSpan(
      'forkpool.worker.run',
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          [FORKPOOL_ATTR.jobId]: spec.id,
          [FORKPOOL_ATTR.label]: spec.label,
          [FORKPOOL_ATTR.worker]: at.worker,
          [FORKPOOL_ATTR.run]: at.run,
          'messaging.system': 'bullmq',
          'messaging.message.id': at.bullId,
        },
      },
      parent,
    );
    if (!span.isRecording()) return undefined;
    const secrets = redactionSecrets(spec.config);
    const loop = new LoopSpans(trace.setSpan(parent, span), {
      model: spec.model ?? spec.config.model,
      capture: captureContent(),
      redact: (text) => redactSecrets(text, secrets),
    });
    return new RunTrace(span, loop);
  }

  event(event: LoopEvent): void {
    this.#loop.event(event);
  }

  end(end: AttemptEnd): void {
    this.#loop.close();
    this.#span.setAttribute('forkpool.run.end', end.kind);
    if (end.kind === 'done') {
      this.#span.setAttributes({ [FORKPOOL_ATTR.stopReason]: end.outcome.stopReason, ...usageAttributes(end.outcome.usage) });
      if (end.outcome.error) this.#span.setStatus({ code: SpanStatusCode.ERROR, message: end.outcome.error.code });
    } else if (end.kind !== 'suspended' && end.kind !== 'sleeping') {
      this.#span.setStatus({
        code: SpanStatusCode.ERROR,
        message: end.kind === 'lost' ? 'the run was lost (its thread died or was stopped)' : 'protocol error',
      });
    }
    this.#span.end();
  }
}
