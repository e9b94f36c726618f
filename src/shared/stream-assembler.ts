/**
 * A streamed chat completion put back together chunk by chunk (src/shared/wires/chat.ts
 * streamOnce), and the cap on one response: content and tool arguments counted as they arrive,
 * past `maxResponseChars` the read stops with MODEL_RESPONSE_TOO_LARGE (never retried).
 */
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { ForkpoolError } from './errors.js';
import type { ModelReply } from './model-types.js';
import { usageFromApi, type Usage } from './usage.js';

export function responseTooLarge(limit: number): ForkpoolError {
  return new ForkpoolError(
    'MODEL_RESPONSE_TOO_LARGE',
    `model response passed maxResponseChars (${limit} characters of content and tool arguments); stopped reading it`,
  );
}

/**
 * The longest one streamed event may be while its answer can still be within `limit`: JSON
 * escapes a character in at most 6 (`\u0000`), plus room for the event's other fields. The
 * assembler counts the answer itself exactly; this bound only stops one event that never ends
 * (a 100 MB answer in one `data:` line) while it arrives, instead of reading it whole.
 */
export function maxEventChars(limit: number): number {
  return limit * 6 + 65_536;
}

export class StreamAssembler {
  #content = '';
  /** Characters of content and tool arguments so far, against the cap. */
  #size = 0;
  readonly #limit: number;
  #calls = new Map<number, { id: string; name: string; args: string }>();
  #finishReason: string | null = null;
  #usage: Usage | undefined;
  #model: string;

  constructor(model: string, limit: number) {
    this.#model = model;
    this.#limit = limit;
  }

  add(chunk: ChatCompletionChunk): void {
    if (chunk.model) this.#model = chunk.model;
    if (chunk.usage) this.#usage = usageFromApi(chunk.usage);
    for (const choice of chunk.choices ?? []) {
      this.#size += (choice.delta?.content?.length ?? 0) + (choice.delta?.tool_calls ?? []).reduce((n, d) => n + (d.function?.arguments?.length ?? 0), 0);
      // Thrown inside the stream loop: leaving it aborts the request, so the rest is never read.
      if (this.#size > this.#limit) throw responseTooLarge(this.#limit);
      if (choice.delta?.content) this.#content += choice.delta.content;
      for (const delta of choice.delta?.tool_calls ?? []) {
        const call = this.#calls.get(delta.index) ?? { id: '', name: '', args: '' };
        if (delta.id) call.id = delta.id;
        if (delta.function?.name) call.name += delta.function.name;
        if (delta.function?.arguments) call.args += delta.function.arguments;
        this.#calls.set(delta.index, call);
      }
      if (choice.finish_reason) this.#finishReason = choice.finish_reason;
    }
  }

  finish(): ModelReply {
    // A stream that ends with no finish_reason was cut off: retry it rather than trust it.
    if (this.#finishReason === null) throw new ForkpoolError('MODEL_REQUEST_FAILED', 'stream ended without a finish_reason (cut off)');
    const toolCalls = [...this.#calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => ({
        id: c.id || `call_${index}`,
        type: 'function' as const,
        function: { name: c.name, arguments: c.args },
      }));
    return {
      content: this.#content,
      toolCalls,
      finishReason: this.#finishReason,
      usage: this.#usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0, requests: 1 },
      model: this.#model,
    };
  }
}
