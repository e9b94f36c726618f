import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { ForkpoolConfig } from '../../shared/config.js';
import { ForkpoolError, serializeError, type SerializedError } from '../../shared/errors.js';
import { createModelClient, type ModelClient, type RateGate } from '../../shared/model-call.js';
import { primarySystemPrompt } from '../../shared/prompts.js';
import { runToolLoop } from '../../shared/tool-loop.js';
import type { LoopEvent, StopReason } from '../../shared/loop-events.js';
import { builtinTools } from '../../shared/tools/index.js';
import { toolPolicyFrom } from '../../shared/tools/policy.js';
import { resolveWorkspaceRoot } from '../../shared/tools/sandbox.js';
import { redactionSecrets } from '../../shared/tools/host-secrets.js';
import { scrubEnv } from '../../shared/tools/secrets.js';
import type { ToolDefinition } from '../../shared/tools/types.js';
import { mergeUsageByModel, type UsageByModel } from '../../shared/usage.js';
import type { HookRunner } from '../hooks/hook-runner.js';
import { promptSubmit, stopCheck } from './parent-hooks.js';
import { capHeadTail } from '../../shared/text-budget.js';
import { PermissionStore, type PermissionAsker } from '../limits/permissions.js';
import { Session } from './session.js';
import type { FollowUpCause } from '../views/follow-up.js';
import { TurnTrace } from './turn-trace.js';
import { TokenRatios } from '../../shared/token-ratio.js';

export type AgentRole = 'primary' | 'escalation';

export interface ParentAgentOptions {
  config: ForkpoolConfig;
  /** Defaults to a client built from `config`; an `openai` client of yours sends the requests itself. */
  client?: ModelClient;
  /** Shared with background jobs; defaults to one holding `config.grantedTools`. */
  permissions?: PermissionStore;
  /** Asks a person about ungranted tools (`permissionMode: 'ask'` on a terminal). */
  asker?: PermissionAsker;
  role?: AgentRole;
  /** Tools beyond the built-ins, e.g. `spawn_background_agent`. */
  extraTools?: readonly ToolDefinition[];
  /** Tools read again at every turn: a catalog's whose list changes (MCP servers connect later, list_changed). */
  turnTools?: () => readonly ToolDefinition[];
  /**
   * Called at the start of every turn, before the model: text to put before the turn's input
   * (delivered background results). Called exactly once per turn.
   */
  turnPreamble?: (turn: number) => string | undefined;
  rateGate?: RateGate;
  onEvent?: (event: ParentEvent) => void;
  /** Its hooks: UserPromptSubmit, Stop, and its tools' PreToolUse/PostToolUse (docs/tools.md "Hooks"). */
  hooks?: HookRunner;
}

export type ParentEvent =
  /**
   * `followUp`: forkpool's own automated turn (its input is forkpool's, not a person's: a surface
   * shows a one-line notice, never a user line); `cause` says why it runs.
   */
  | { type: 'turn_start'; turn: number; followUp: boolean; cause?: FollowUpCause; repeatedPrompt: boolean }
  | { type: 'loop'; turn: number; event: LoopEvent }
  | { type: 'turn_end'; turn: number; stopReason: StopReason; usage: UsageByModel };

export interface TurnResult {
  turn: number;
  answer: string;
  stopReason: StopReason;
  usage: UsageByModel;
  error?: SerializedError;
}

/**
 * The parent agent on the main thread: one session, one turn at a time, the shared tool loop
 * with the built-in tools plus whatever the background module adds.
 */
export class ParentAgent {
  readonly session: Session;
  readonly role: AgentRole;
  readonly permissions: PermissionStore;
  /** How the endpoint counts this parent's requests, learned from its usage (token-ratio.ts): the history's budget counts in it. */
  readonly tokenRatios = new TokenRatios();
  readonly #config: ForkpoolConfig;
  readonly #client: ModelClient;
  readonly #options: ParentAgentOptions;
  readonly #tools: ToolDefinition[];
  #busy = false;
  #workspaceRoot: Promise<string>;
  /** The turn running now: its input and actions so far (not in the session until it ends). */
  #current: { input: string; actions: string[] } | undefined;
  /** The running turn's span, when a tracer provider records it (turn-trace.ts). */
  #trace: TurnTrace | undefined;

  constructor(options: ParentAgentOptions) {
    this.#options = options;
    this.#config = options.config;
    this.role = options.role ?? 'primary';
    this.#client = options.client ?? createModelClient(options.config);
    this.permissions = options.permissions ?? new PermissionStore(options.config.grantedTools);
    this.#tools = [...builtinTools(options.config.tools), ...(options.extraTools ?? [])];
    const canSpawn = this.#tools.some((t) => t.name === 'spawn_background_agent');
    const deliveryFormat = options.config.delivery.format;
    this.session = new Session(primarySystemPrompt({ workspaceRoot: options.config.workspaceRoot, canSpawn, deliveryFormat }), {
      historyMaxTokens: options.config.parentHistoryMaxTokens,
      summaryMaxChars: options.config.sessionSummaryMaxChars,
      tokenRatio: () => this.tokenRatios.ratio(this.#config.model),
    });
    this.#workspaceRoot = resolveWorkspaceRoot(options.config.workspaceRoot, { allowBroad: options.config.allowBroadWorkspace });
    // Checked again when a turn runs; this keeps an unhandled rejection from escaping meanwhile.
    this.#workspaceRoot.catch(() => {});
  }

  /** The traceparent a job spawned by this turn's call `callId` carries (absent: no provider, no turn). */
  traceparentFor(callId: string | undefined): { traceparent: string } | Record<string, never> {
    const traceparent = this.#trace?.traceparentFor(callId);
    return traceparent === undefined ? {} : { traceparent };
  }

  get busy(): boolean {
    return this.#busy;
  }

  get config(): ForkpoolConfig {
    return this.#config;
  }

  /**
   * The capped session digest a `full_context` background job receives: the earlier turns,
   * then this turn's request and what the parent has done in it so far (kept whole first: a
   * job spawned in the first turn still learns what it is for).
   */
  summary(): string {
    const max = this.#config.sessionSummaryMaxChars;
    if (!this.#current) return this.session.summary(max);
    const lines = [`Current request: ${oneLine(this.#current.input, 600)}`, ...this.#current.actions.slice(-12)];
    const current = capHeadTail(['This turn so far:', ...lines].join('\n'), Math.floor(max / 2));
    const earlier = this.session.summary(Math.max(0, max - current.length - 1));
    return earlier ? `${earlier}\n${current}` : current;
  }

  /**
   * Runs one turn. `followUp` marks forkpool's own synthetic follow-up turn (`cause`: why).
   * `preamble`: text put before the input, made by the caller (else `turnPreamble`'s); `apart`
   * makes it a user message of its own before the input's. Rejects when a turn is already
   * running (the dispatcher queues instead).
   */
  async runTurn(
    input: string,
    options: { signal?: AbortSignal; followUp?: boolean; cause?: FollowUpCause; preamble?: { text: string; apart: boolean } } = {},
  ): Promise<TurnResult> {
    if (this.#busy) throw new ForkpoolError('TURN_BUSY', 'a turn is already running on this agent');
    this.#busy = true;
    try {
      const workspaceRoot = await this.#workspaceRoot;
      const turn = this.session.turns + 1;
      const emit = this.#options.onEvent ?? (() => {});
      emit({
        type: 'turn_start',
        turn,
        followUp: options.followUp ?? false,
        ...(options.cause ? { cause: options.cause } : {}),
        repeatedPrompt: this.session.isRepeatedPrompt(input),
      });
      const report = (event: LoopEvent) => emit({ type: 'loop', turn, event });
      const hooks = this.#options.hooks;
      const signal = options.signal ?? new AbortController().signal;
      // A person's prompt only: a follow-up's input is forkpool's own.
      const submitted = options.followUp ? { input } : await promptSubmit(hooks, input, signal, report);
      if ('blocked' in submitted) {
        // Not sent, not kept: the session goes on as if it had not been typed.
        const error = new ForkpoolError('HOOK_BLOCKED', `prompt blocked by a UserPromptSubmit hook: ${submitted.blocked}`);
        emit({ type: 'turn_end', turn, stopReason: 'aborted', usage: {} });
        return { turn, answer: error.message, stopReason: 'aborted', usage: {}, error: serializeError(error) };
      }
      // Drain before the model is called: results that ended before this turn are in its context.
      this.#current = { input, actions: [] };
      const { text: preamble, apart } = options.preamble ?? { text: this.#options.turnPreamble?.(turn), apart: false };
      const prompt = submitted.input;
      const inputs: ChatCompletionMessageParam[] =
        preamble && apart
          ? [
              { role: 'user', content: preamble },
              { role: 'user', content: prompt },
            ]
          : [{ role: 'user', content: preamble ? `${preamble}\n\n${prompt}` : prompt }];
      const secrets = redactionSecrets(this.#config);
      const trace = (this.#trace = TurnTrace.start({ turn, followUp: options.followUp ?? false, role: this.role, model: this.#config.model, input, secrets }));
      const runLoop = (messages: ChatCompletionMessageParam[]) =>
        runToolLoop({
          client: this.#client,
          config: this.#config,
          messages,
          tools: this.#options.turnTools ? [...this.#tools, ...this.#options.turnTools()] : this.#tools,
          toolContext: {
            workspaceRoot,
            limits: this.#config.toolLimits,
            permissions: this.permissions.parentGate(this.#options.asker),
            env: scrubEnv(process.env),
            policy: toolPolicyFrom(this.#config),
          },
          signal: options.signal,
          rateGate: this.#options.rateGate,
          secrets,
          hooks: hooks?.toolHooks(),
          tokenRatios: this.tokenRatios,
          onEvent: (event) => {
            trace?.event(event);
            this.#noteAction(event);
            report(event);
          },
        });
      let result = await runLoop([...this.session.messages, ...inputs]);
      // A Stop hook may send the answer back once: one more run, its usage added.
      if (result.stopReason === 'final') {
        const again = await stopCheck(hooks, result.finalText, false, signal, report);
        if (again !== undefined) {
          const first = result.usage;
          result = await runLoop([...result.messages, { role: 'user', content: again }]);
          result = { ...result, usage: mergeUsageByModel(first, result.usage) };
          if (result.stopReason === 'final') await stopCheck(hooks, result.finalText, true, signal, report);
        }
      }
      this.session.commitTurn(input, result.messages);
      this.session.addUsage(this.role, result.usage);
      trace?.end({ stopReason: result.stopReason, answer: result.finalText, usage: result.usage, error: result.error });
      this.#trace = undefined;
      emit({ type: 'turn_end', turn, stopReason: result.stopReason, usage: result.usage });
      return {
        turn,
        answer: result.finalText,
        stopReason: result.stopReason,
        usage: result.usage,
        ...(result.error ? { error: result.error } : {}),
      };
    } catch (error) {
      this.#trace?.end({ thrown: error });
      throw error;
    } finally {
      this.#trace = undefined;
      this.#busy = false;
      this.#current = undefined;
    }
  }

  /** This turn's actions, for {@link summary}: tool calls and what the model said between them. */
  #noteAction(event: LoopEvent): void {
    if (!this.#current) return;
    if (event.type === 'tool_call') this.#current.actions.push(`Used ${event.name}(${oneLine(event.argsPreview, 120)})`);
    else if (event.type === 'assistant_text') this.#current.actions.push(`Said: ${oneLine(event.text, 300)}`);
  }
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
