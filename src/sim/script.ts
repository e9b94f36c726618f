/**
 * Scripted mode: each request takes the next step. A request past the end is an error the
 * test sees twice: as an HTTP 500 to the client and in `scriptErrors` / `assertScriptDone()`.
 */
import { ForkpoolError } from '../shared/errors.js';
import { toolCall, type SimReply } from './reply.js';
import type { ScriptStep } from './types.js';

export class ScriptCursor {
  #steps: readonly ScriptStep[];
  #next = 0;
  readonly errors: string[];

  constructor(steps: readonly ScriptStep[], errors: string[]) {
    this.#steps = steps;
    this.errors = errors;
  }

  /** Takes the next step, or records "exhausted" and returns undefined. */
  take(n: number): ScriptStep | undefined {
    const step = this.#steps[this.#next];
    if (step === undefined) {
      this.errors.push(`sim script exhausted at request ${n}`);
      return undefined;
    }
    this.#next++;
    return step;
  }

  get remaining(): number {
    return this.#steps.length - this.#next;
  }

  assertDone(): void {
    const problems = [...this.errors];
    if (this.remaining > 0) {
      const unused = this.#steps.slice(this.#next).map((s, i) => `#${this.#next + i + 1} ${describeStep(s)}`);
      problems.push(`${this.remaining} script step(s) unused: ${unused.join('; ')}`);
    }
    if (problems.length > 0) throw new ForkpoolError('SIM_SCRIPT', `sim script not done:\n${problems.join('\n')}`);
  }
}

export function stepReply(step: ScriptStep, n: number): SimReply {
  const reply: SimReply = {
    content: step.content ?? null,
    toolCalls: (step.toolCalls ?? []).map((c, i) => toolCall(n, i, c.name, c.arguments, c.id)),
  };
  if (step.usage) reply.usage = { ...step.usage };
  if (step.finishReason) reply.finishReason = step.finishReason;
  // A step with nothing in it still answers: an empty final message.
  if (reply.content === null && reply.toolCalls.length === 0) reply.content = '';
  return reply;
}

function describeStep(step: ScriptStep): string {
  if (step.fault) return `fault ${step.fault.kind}`;
  if (step.toolCalls?.length) return `tool calls ${step.toolCalls.map((c) => c.name).join(', ')}`;
  return `content ${JSON.stringify((step.content ?? '').slice(0, 40))}`;
}
