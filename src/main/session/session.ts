import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { DEFAULTS } from '../../shared/defaults.js';
import { AUTOMATED_RESULTS_MARKER, isFollowUpPrompt } from '../../shared/prompts.js';
import { capHeadTail } from '../../shared/text-budget.js';
import type { SessionSnapshot } from '../ledger/ledger-store.js';
import { addModelUsage, mergeUsageByModel, totalUsage, type Usage, type UsageByModel } from '../../shared/usage.js';
import { estimateMessagesTokens } from '../../shared/token-ratio.js';

/** Usage bucket: `primary`, `primary:subagent`, `escalation:subagent`, `user:subagent`, … */
export type UsageBucket = string;

/** How many identical user prompts in a row count as a person repeating themselves. */
const REPEAT_THRESHOLD = 3;
/** Folding stops once the history is back under this share of its budget, so it happens rarely. */
const FOLD_TARGET = 0.6;
/** Stands for the answer of a turn a crash cut short (see {@link Session.commitInterrupted}). */
export const INTERRUPTED_TURN_ANSWER =
  '(This turn was cut short by a restart before it was answered. The background agents it started carry on; their results come in a later turn.)';

/** Opens the message that carries the folded turns' digest (a second system message). */
export const FOLDED_SUMMARY_HEADER = 'Summary of the earlier part of this session (older turns were folded into it to keep the context bounded):';

export interface SessionOptions {
  /** Estimated tokens (by text kind, then by the learned ratio) past which the oldest turns are folded into the summary. */
  historyMaxTokens?: number;
  /** Cap of the folded summary message, in characters (the seeds' capped session summary). */
  summaryMaxChars?: number;
  /**
   * The endpoint's reported prompt tokens per estimated one, as learned so far (token-ratio.ts):
   * the history is counted in the endpoint's tokens. Default 1 (the estimate alone).
   */
  tokenRatio?: () => number;
}

/**
 * One parent conversation: its messages and token totals by bucket and model. The history
 * changes only by whole turns, so it is always a valid chat-completions history: it grows by a
 * turn at a time, and when it passes its token budget its oldest whole turns (a tool call never
 * apart from its result) are folded into a capped summary kept right after the system prompt.
 */
export class Session {
  readonly #messages: ChatCompletionMessageParam[] = [];
  /** The last few inputs, for the repeated-prompt check; older ones are not needed. */
  readonly #userInputs: string[] = [];
  readonly #historyMaxTokens: number;
  readonly #summaryMaxChars: number;
  readonly #tokenRatio: () => number;
  /** Digest lines of every folded turn, capped (head and tail) to the summary's size. */
  #folded = '';
  #foldedTurns = 0;
  #usage: Record<UsageBucket, UsageByModel> = {};
  #turns = 0;

  constructor(systemPrompt: string, options: SessionOptions = {}) {
    this.#messages.push({ role: 'system', content: systemPrompt });
    this.#historyMaxTokens = options.historyMaxTokens ?? DEFAULTS.parentHistoryMaxTokens;
    this.#summaryMaxChars = options.summaryMaxChars ?? DEFAULTS.sessionSummaryMaxChars;
    this.#tokenRatio = options.tokenRatio ?? (() => 1);
  }

  /** Turns folded into the summary so far. */
  get foldedTurns(): number {
    return this.#foldedTurns;
  }

  /** The history's size by the same estimate that triggers folding. */
  estimatedTokens(): number {
    return this.#count(this.#messages);
  }

  /** Tokens of a history as the endpoint would count them, as far as its ratio is learned. */
  #count(messages: readonly ChatCompletionMessageParam[]): number {
    return Math.ceil(estimateTokens(messages) * this.#tokenRatio());
  }

  get messages(): readonly ChatCompletionMessageParam[] {
    return this.#messages;
  }

  get turns(): number {
    return this.#turns;
  }

  /** Everything a durable ledger keeps of this conversation (plain data, a copy). */
  snapshot(id: string): SessionSnapshot {
    return structuredClone({
      id,
      turns: this.#turns,
      messages: this.#messages,
      usage: this.#usage,
      folded: this.#folded,
      foldedTurns: this.#foldedTurns,
      userInputs: this.#userInputs,
    });
  }

  /** Goes on from a stored conversation (a resumed session): its history, turn count, totals and summary. */
  restore(snapshot: SessionSnapshot): void {
    this.#messages.splice(0, this.#messages.length, ...structuredClone(snapshot.messages));
    this.#userInputs.splice(0, this.#userInputs.length, ...snapshot.userInputs);
    this.#turns = snapshot.turns;
    this.#usage = structuredClone(snapshot.usage);
    this.#folded = snapshot.folded;
    this.#foldedTurns = snapshot.foldedTurns;
  }

  /**
   * A turn a crash cut short (its prompt was saved, its answer never was): committed with the
   * prompt and a note in place of the answer, so the jobs it started answer a question the
   * conversation holds. Only for a resumed session, before its next turn.
   */
  commitInterrupted(userInput: string): void {
    this.commitTurn(userInput, [...this.#messages, { role: 'user', content: userInput }, { role: 'assistant', content: INTERRUPTED_TURN_ANSWER }]);
  }

  /** Replaces the history after a turn with the loop's full history (which starts with ours). */
  commitTurn(userInput: string, history: readonly ChatCompletionMessageParam[]): void {
    this.#turns++;
    this.#userInputs.push(userInput);
    if (this.#userInputs.length > REPEAT_THRESHOLD) this.#userInputs.shift();
    this.#messages.splice(0, this.#messages.length, ...history);
    if (this.#count(this.#messages) > this.#historyMaxTokens) this.#fold();
  }

  /**
   * Folds the oldest whole turns into the summary message until the history is back under
   * {@link FOLD_TARGET} of its budget, always keeping the system prompt and the latest turn. A
   * turn runs from a user message to the next one, so its tool calls and results go together.
   */
  #fold(): void {
    const target = this.#historyMaxTokens * FOLD_TARGET;
    let prefix = this.#prefixLength();
    for (;;) {
      const starts = turnStarts(this.#messages, prefix);
      if (starts.length < 2 || this.#count(this.#messages) <= target) return;
      const oldest = this.#messages.slice(starts[0], starts[1]);
      this.#folded = capHeadTail([this.#folded, ...digestLines(oldest)].filter(Boolean).join('\n'), this.#summaryMaxChars);
      this.#foldedTurns++;
      const summary: ChatCompletionMessageParam = { role: 'system', content: `${FOLDED_SUMMARY_HEADER}\n${this.#folded}` };
      // System prompt, summary, then what is left of the turns.
      this.#messages.splice(1, (starts[1] as number) - 1, summary);
      prefix = 2;
    }
  }

  /** The system prompt, and the summary message once there is one. */
  #prefixLength(): number {
    const second = this.#messages[1];
    return second?.role === 'system' && typeof second.content === 'string' && second.content.startsWith(FOLDED_SUMMARY_HEADER) ? 2 : 1;
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
    if (isFollowUpPrompt(input)) return false;
    const recent = this.#userInputs.slice(-(REPEAT_THRESHOLD - 1));
    return recent.length === REPEAT_THRESHOLD - 1 && recent.every((previous) => previous.trim() === input.trim());
  }

  /**
   * The seeds' `LastLocalSummary`: a capped digest of what this session asked, read and
   * concluded, for a `full_context` background job. Head and tail kept.
   */
  summary(maxChars: number): string {
    const lines = digestLines(this.#messages.slice(this.#prefixLength()));
    return capHeadTail([this.#folded, ...lines].filter(Boolean).join('\n'), maxChars);
  }
}

/** What a run of messages asked, used and concluded, one line each. */
function digestLines(messages: readonly ChatCompletionMessageParam[]): string[] {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === 'user' && typeof message.content === 'string') {
      // forkpool's own hidden message (the `remy` delivery format): no one asked anything in it.
      if (message.content.startsWith(AUTOMATED_RESULTS_MARKER)) lines.push('Background results were delivered.');
      else lines.push(`User asked: ${oneLine(stripBlocks(message.content), 300)}`);
    } else if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) {
        if (call.type === 'function') lines.push(`Used ${call.function.name}(${oneLine(call.function.arguments, 120)})`);
      }
      if (typeof message.content === 'string' && message.content.trim()) lines.push(`Concluded: ${oneLine(message.content, 400)}`);
    }
  }
  return lines;
}

/** Where each turn starts (its user message), from `from` on. */
function turnStarts(messages: readonly ChatCompletionMessageParam[], from: number): number[] {
  const starts: number[] = [];
  for (let i = from; i < messages.length; i++) if (messages[i]?.role === 'user') starts.push(i);
  return starts;
}

/**
 * The history's tokens, estimated by text kind (token-estimate.ts: code and JSON are denser than
 * 4 characters a token), plus a little per message and per call for its framing.
 */
export function estimateTokens(messages: readonly ChatCompletionMessageParam[]): number {
  return estimateMessagesTokens(messages);
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Background result blocks are already summaries; the digest keeps only the person's words. */
function stripBlocks(text: string): string {
  return text.replace(/<background_results>[\s\S]*?<\/background_results>/g, '[background results]');
}
