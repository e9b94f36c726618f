import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { configForAgent } from '../shared/agents.js';
import type { ForkpoolConfig } from '../shared/config.js';
import { ForkpoolError, ToolError } from '../shared/errors.js';
import { isStrictCompatible, outputValidator, structuredOutputMode, SUBMIT_RESULT_TOOL, type OutputCheck, type OutputSchema } from '../shared/output-schema.js';
import type { JobSpec } from '../shared/protocol.js';
import type { ToolDefinition } from '../shared/tools/types.js';

/**
 * A typed job's output (docs/delivery.md "Typed results"), one per run of the job: how its answer
 * is bound (a `response_format` on every request, or the terminating `submit_result` tool), the
 * check of its final value against the schema, and its one repair turn. Nothing here outlives
 * the job: the validator is compiled per job.
 */
export class TypedOutput {
  readonly mode: 'response_format' | 'tool';
  readonly #check: (value: unknown) => OutputCheck;
  readonly #schema: OutputSchema;
  /** The root is not an object: the tool's parameters wrap it as `{ result }` (tool arguments are objects). */
  readonly #wrapped: boolean;
  #repairsLeft = 1;
  /** What `submit_result` was last called with, once it ends the run: accepted, or rejected for good. */
  #submitted: { ok: true; data: unknown } | { ok: false; errors: string; text: string } | undefined;

  constructor(schema: OutputSchema, mode: 'response_format' | 'tool') {
    this.mode = mode;
    this.#schema = schema;
    this.#check = outputValidator(schema);
    this.#wrapped = schema.type !== 'object';
  }

  /** The `response_format` of each request (response_format mode); strict only where the schema meets strict's rules. */
  get responseFormat(): ChatCompletionCreateParams['response_format'] | undefined {
    if (this.mode !== 'response_format') return undefined;
    return { type: 'json_schema', json_schema: { name: 'result', schema: this.#schema, strict: isStrictCompatible(this.#schema) } };
  }

  /** The line added to the job's system prompt, so the model knows how to end. */
  get instruction(): string {
    return this.mode === 'tool'
      ? `When you have the answer, call the ${SUBMIT_RESULT_TOOL} tool with it (its parameters are the result's schema); the job ends there. Do not answer in plain text.`
      : 'Your final answer (the message without tool calls) must be a single JSON value matching the response format; nothing else.';
  }

  /** The terminating tool (tool mode): its arguments are the value; a bad value is a tool error once, then the end. */
  get tools(): ToolDefinition[] {
    if (this.mode !== 'tool') return [];
    const { $defs, ...inner } = this.#schema;
    const jsonSchema = this.#wrapped
      ? { type: 'object', properties: { result: inner }, required: ['result'], additionalProperties: false, ...($defs ? { $defs } : {}) }
      : this.#schema;
    const tool: ToolDefinition<Record<string, unknown>> = {
      name: SUBMIT_RESULT_TOOL,
      description: "Submit the job's result. Call it once, when you have the answer: the job ends with this value.",
      // The schema's own check comes in run(): its errors are the repair turn's text.
      parameters: z.record(z.string(), z.unknown()),
      jsonSchema,
      gated: false,
      run: async (args) => this.#submit(this.#wrapped ? args.result : args),
    };
    return [tool];
  }

  /** After a batch of tool calls: the run's final text when `submit_result` ended it (see ToolLoopOptions.finishedBy). */
  finishedBy = (): string | undefined => {
    const submitted = this.#submitted;
    if (!submitted) return undefined;
    return submitted.ok ? JSON.stringify(submitted.data) : submitted.text;
  };

  /**
   * The run ended with a final answer: its value (`data`), a repair message to send (once), or
   * RESULT_INVALID with the last text kept.
   */
  settle(
    finalText: string,
  ): { kind: 'data'; data: unknown; text: string } | { kind: 'repair'; message: string } | { kind: 'invalid'; error: ForkpoolError; text: string } {
    const submitted = this.#submitted;
    // The text is the value's JSON, whichever mechanic: what the delivery block and `resultText` show.
    if (submitted?.ok) return { kind: 'data', data: submitted.data, text: JSON.stringify(submitted.data) };
    if (submitted) return { kind: 'invalid', error: invalid(submitted.errors), text: submitted.text };
    const checked =
      this.mode === 'tool' ? { ok: false as const, errors: `answered in text without calling ${SUBMIT_RESULT_TOOL}` } : this.#checkText(finalText);
    if (checked.ok) return { kind: 'data', data: checked.data, text: JSON.stringify(checked.data) };
    if (this.#repairsLeft > 0) {
      this.#repairsLeft--;
      const how = this.mode === 'tool' ? `Call ${SUBMIT_RESULT_TOOL} with a value that matches it.` : 'Answer again with only a JSON value that matches it.';
      return { kind: 'repair', message: `[forkpool] Your result does not match the output schema:\n${checked.errors}\n${how}` };
    }
    return { kind: 'invalid', error: invalid(checked.errors), text: finalText };
  }

  #checkText(text: string): OutputCheck {
    let value: unknown;
    try {
      value = JSON.parse(stripFence(text));
    } catch {
      return { ok: false, errors: `the answer is not JSON: ${JSON.stringify(text.slice(0, 120))}` };
    }
    return this.#check(value);
  }

  #submit(value: unknown): string {
    const checked = this.#check(value);
    if (checked.ok) {
      this.#submitted = { ok: true, data: checked.data };
      return 'Result received; the job ends here.';
    }
    if (this.#repairsLeft > 0) {
      this.#repairsLeft--;
      throw new ToolError(
        'RESULT_INVALID',
        SUBMIT_RESULT_TOOL,
        `the result does not match the output schema:\n${checked.errors}\nCall ${SUBMIT_RESULT_TOOL} again with a corrected value.`,
      );
    }
    this.#submitted = { ok: false, errors: checked.errors, text: JSON.stringify(value) ?? '' };
    return 'Result rejected: it does not match the output schema.';
  }
}

/**
 * The job's typed output, when it has a schema: its spawn's own, else its agent's. The mode is
 * its agent's `structuredOutput`, else the config's, resolved against the job's endpoint.
 */
export function typedOutputFor(spec: JobSpec, config: ForkpoolConfig): TypedOutput | undefined {
  const agent = spec.agent !== undefined && Object.hasOwn(spec.config.agents, spec.agent) ? spec.config.agents[spec.agent] : undefined;
  const schema = spec.outputSchema ?? agent?.outputSchema;
  if (schema === undefined) return undefined;
  const endpoint = configForAgent(spec.config, spec.agent).baseUrl ?? config.baseUrl;
  return new TypedOutput(schema, structuredOutputMode(agent?.structuredOutput ?? spec.config.structuredOutput, endpoint));
}

function invalid(errors: string): ForkpoolError {
  return new ForkpoolError('RESULT_INVALID', `the result does not match the output schema after one repair turn:\n${errors}`);
}

/** A JSON answer some models wrap in a ``` fence anyway. */
function stripFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/.exec(text);
  return fenced ? (fenced[1] as string) : text;
}
