import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { BACKGROUND_FOLLOWUP_PROMPT } from '../shared/prompts.js';
import { capHeadTail } from '../shared/text-budget.js';
import { addModelUsage, mergeUsageByModel, totalUsage, type Usage, type UsageByModel } from '../shared/usage.js';

/** Usage bucket: `primary`, `primary:subagent`, `escalation:subagent`, `user:subagent`, … */
export type UsageBucket = string;

/** How many identical user prompts in a row count as a person repeating themselves. */
const REPEAT_THRESHOLD = 3;

/**
 * One parent conversation: its messages and token totals by bucket and model. The history
 * only grows through whole turns, so it is always a valid chat-completions history.
 */
export class Session {
  readonly #messages: ChatCompletionMessageParam[] = [];
  readonly #userInputs: string[] = [];
  #usage: Record<UsageBucket, UsageByModel> = {};
  #turns = 0;

  constructor(systemPrompt: string) {
    this.#messages.push({ role: 'system', content: systemPrompt });
  }

  get messages(): readonly ChatCompletionMessageParam[] {
    return this.#messages;
  }

  get turns(): number {
    return this.#turns;
  }

  /** Replaces the history after a turn with the loop's full history (which starts with ours). */
  commitTurn(userInput: string, history: readonly ChatCompletionMessageParam[]): void {
    this.#turns++;
    this.#userInputs.push(userInput);
    this.#messages.splice(0, this.#messages.length, ...history);
  }

  addUsage(bucket: UsageBucket, byModel: UsageByModel): void {
    this.#usage = { ...this.#usage, [bucket]: mergeUsageByModel(this.#usage[bucket] ?? {}, byModel) };
  }

  addModelUsage(bucket: UsageBucket, model: string, usage: Usage): void {
    this.#usage = { ...this.#usage, [bucket]: addModelUsage(this.#usage[bucket] ?? {}, model, usage) };
  }

  /** A read-only copy of the totals, by bucket then model. */
  usage(): Record<UsageBucket, UsageByModel> {
    return structuredClone(this.#usage);
  }

  totalUsage(): Usage {
    return totalUsage(Object.values(this.#usage).reduce<UsageByModel>((acc, m) => mergeUsageByModel(acc, m), {}));
  }

  /**
   * True when a person sent the same prompt several times in a row. forkpool's own follow-up
   * prompt is exempt here, in the check itself, so no caller can forget the exemption.
   */
  isRepeatedPrompt(input: string): boolean {
    if (input.trim() === BACKGROUND_FOLLOWUP_PROMPT) return false;
    const recent = this.#userInputs.slice(-(REPEAT_THRESHOLD - 1));
    return recent.length === REPEAT_THRESHOLD - 1 && recent.every((previous) => previous.trim() === input.trim());
  }

  /**
   * The seeds' `LastLocalSummary`: a capped digest of what this session asked, read and
   * concluded, for a `full_context` background job. Head and tail kept.
   */
  summary(maxChars: number): string {
    const lines: string[] = [];
    for (const message of this.#messages) {
      if (message.role === 'user' && typeof message.content === 'string') {
        lines.push(`User asked: ${oneLine(stripBlocks(message.content), 300)}`);
      } else if (message.role === 'assistant') {
        for (const call of message.tool_calls ?? []) {
          if (call.type === 'function') lines.push(`Used ${call.function.name}(${oneLine(call.function.arguments, 120)})`);
        }
        if (typeof message.content === 'string' && message.content.trim()) lines.push(`Concluded: ${oneLine(message.content, 400)}`);
      }
    }
    return capHeadTail(lines.join('\n'), maxChars);
  }
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Background result blocks are already summaries; the digest keeps only the person's words. */
function stripBlocks(text: string): string {
  return text.replace(/<background_results>[\s\S]*?<\/background_results>/g, '[background results]');
}
