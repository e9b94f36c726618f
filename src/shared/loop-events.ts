/**
 * What a tool loop says about itself: its progress events and why it stopped. Wire types (they
 * cross the job's port inside `progress` and `done`), so they sit below both the loop
 * (tool-loop.ts) and the port protocol (protocol.ts), and import nothing but usage.
 */
import type { Usage } from './usage.js';

/**
 * Why a tool loop stopped, as the loop itself saw it: its `final` answer, a budget or the
 * iteration cap, a detected loop, an abort (the stop asked for by the main thread, see
 * {@link StopRequest} in protocol.ts), a model failure, or a reply cut at the token limit
 * (`truncated`: `finish_reason: "length"` even after one continuation). A job's record keeps it next to its
 * `status` and `endedBy`, which say what the manager made of it.
 */
export const STOP_REASONS = ['final', 'budget_exceeded', 'loop_detected', 'aborted', 'error', 'truncated'] as const;
export type StopReason = (typeof STOP_REASONS)[number];

/** Progress of one run, for logs, the CLI and a job's port. Never carries secrets. */
export type LoopEvent =
  | { type: 'model_request'; iteration: number }
  /**
   * `ms`: the call's time, its retries included (absent from an older worker). `model`: the
   * configured name, which usage and prices are booked under; `servedModel`: the name the server
   * answered with, when it differs (a GGUF path, a dated snapshot). `finishReason`: the model's
   * (`stop`, `tool_calls`, `length`…), when it gave one.
   */
  | { type: 'model_response'; iteration: number; toolCalls: number; usage: Usage; model: string; servedModel?: string; ms?: number; finishReason?: string }
  /** The model said something (with or without tool calls): its first text turn, partial findings. Capped. */
  | { type: 'assistant_text'; iteration: number; text: string; final: boolean }
  /** A model call about to be retried: `attempt` of `maxRetries`, its HTTP `status` and the endpoint's `host` (see retryLine). */
  | { type: 'retry'; attempt: number; delayMs: number; reason: string; status?: number; host?: string; maxRetries?: number }
  /**
   * `background`: the call starts a background job and returns at once (spawn_background_agent); absent otherwise.
   * `args`: the arguments for a job's transcript, redacted and cut to head and tail (TRANSCRIPT_LIMITS.event.argsChars); absent from an older worker.
   */
  | { type: 'tool_call'; callId: string; name: string; argsPreview: string; args?: string; background?: true }
  /** `output`: what the model read, redacted and cut to head and tail (TRANSCRIPT_LIMITS.event.outputChars) for a job's transcript; `chars`: its whole length. */
  | { type: 'tool_result'; callId: string; name: string; ok: boolean; chars: number; ms: number; output?: string }
  | { type: 'loop_warning'; name: string; repeats: number }
  /** A message sent to the job interrupted its model call in flight: cancelled, not failed; the loop goes on with the message. */
  /** `usage`: what it counts against the budget (one request, its prompt's tokens estimated); absent from an older worker. */
  | { type: 'model_interrupted'; iteration: number; usage?: Usage; model?: string }
  /** Messages sent to the job (by number) went into its conversation, before its next model call. */
  | { type: 'messages_received'; ids: number[] };
