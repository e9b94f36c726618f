import { z } from 'zod';
import { errorMessage } from '../../shared/errors.js';
import { argsSchemaOf, toolAnswerText, type ToolCallContext, type ToolDefinition } from '../../shared/tool-contract.js';
import type { HostToolAnswer } from '../../shared/protocol.js';
import { capHeadTail } from '../../shared/text-budget.js';
import { redactToolOutput } from '../../shared/tools/secrets.js';

/** How a host call is bounded: its timeout, the output cap, the secrets its answer must not show. */
export interface HostCallLimits {
  timeoutMs: number;
  outputMaxChars: number;
  secrets: readonly string[];
}

/**
 * Runs one host tool call on the main thread: the arguments validated against the tool's real
 * schema, `run` under `signal` and the tool's timeout, its answer as text, capped and redacted
 * (the job's loop does both again; a capped answer is what crosses the port). Never rejects:
 * every failure is an answer the model reads. A tool that ignores its signal is left behind: the
 * call answers at the abort and its promise is dropped.
 */
export async function runHostCall(
  def: ToolDefinition,
  args: unknown,
  ctx: Omit<ToolCallContext, 'signal'>,
  signal: AbortSignal,
  limits: HostCallLimits,
): Promise<HostToolAnswer> {
  const parsed = argsSchemaOf(def.parameters).safeParse(args);
  if (!parsed.success) return { ok: false, code: 'TOOL_ARGUMENTS_INVALID', message: `invalid arguments for ${def.name}: ${z.prettifyError(parsed.error)}` };
  const controller = new AbortController();
  const timeoutMs = def.timeoutMs ?? limits.timeoutMs;
  let stopped: HostToolAnswer | undefined;
  let wake: () => void = () => {};
  const woken = new Promise<void>((resolve) => (wake = resolve));
  const stop = (answer: HostToolAnswer, reason: unknown) => {
    stopped ??= answer;
    controller.abort(reason);
    wake();
  };
  const onAbort = () => stop({ ok: false, code: 'ABORTED', message: `${def.name} was stopped (${errorMessage(signal.reason)})` }, signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(
    () => stop({ ok: false, code: 'TOOL_TIMEOUT', message: `tool ${def.name} timed out after ${timeoutMs} ms` }, new Error('tool timeout')),
    timeoutMs,
  );
  try {
    if (stopped) return stopped;
    const running = Promise.resolve().then(() => def.run(parsed.data, { ...ctx, signal: controller.signal }));
    const answer = await Promise.race([running.then((value) => ({ value })), woken.then(() => undefined)]);
    if (stopped || !answer) return stopped ?? { ok: false, code: 'ABORTED', message: `${def.name} was stopped` };
    return { ok: true, output: capHeadTail(redactToolOutput(toolAnswerText(answer.value), limits.secrets), limits.outputMaxChars) };
  } catch (error) {
    if (stopped) return stopped;
    return { ok: false, code: 'TOOL_FAILED', message: capHeadTail(redactToolOutput(errorMessage(error), limits.secrets), limits.outputMaxChars) };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

/**
 * The host calls of one job's attempt, by request id: each has its own AbortController, aborted
 * when the job says so (`tool-abort`), or all at once when the attempt is stopped or ends (its
 * thread died, was hard-stopped, or the job ended): a call never outlives its job.
 */
export class HostCalls {
  readonly #running = new Map<number, AbortController>();

  /** Starts a call; `answer` is called once with its answer unless the call was aborted first. */
  start(requestId: number, run: (signal: AbortSignal) => Promise<HostToolAnswer>, answer: (answer: HostToolAnswer) => void): void {
    if (this.#running.has(requestId)) return;
    const controller = new AbortController();
    this.#running.set(requestId, controller);
    void run(controller.signal)
      .catch((error: unknown): HostToolAnswer => ({ ok: false, code: 'TOOL_FAILED', message: errorMessage(error) }))
      .then((result) => {
        if (this.#running.get(requestId) !== controller) return;
        this.#running.delete(requestId);
        answer(result);
      });
  }

  abort(requestId: number, reason: unknown): void {
    this.#running.get(requestId)?.abort(reason);
  }

  abortAll(reason: unknown): void {
    for (const controller of this.#running.values()) controller.abort(reason);
  }

  get size(): number {
    return this.#running.size;
  }
}
