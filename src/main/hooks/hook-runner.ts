import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../../shared/config.js';
import { toolPolicyFrom } from '../../shared/tools/policy.js';
import { errorMessage } from '../../shared/errors.js';
import {
  HOOK_CALL_PREFIX,
  JOB_HOOK_EVENTS,
  combineVerdicts,
  hookMatches,
  verdictOf,
  type HookAnswer,
  type HookEvent,
  type HookInput,
  type HookVerdict,
  type HooksConfig,
  type JobHookEvent,
  type ToolHooks,
} from '../../shared/hooks.js';
import type { HostToolAnswer } from '../../shared/protocol.js';
import { runCommandHook, type CommandHookPlace } from './command-hook.js';

/** A library hook: runs on the main thread; returns what a command hook's stdout JSON may carry (or nothing). */
export type HookFunction = (input: HookInput, context: { signal: AbortSignal }) => HookAnswer | undefined | void | Promise<HookAnswer | undefined | void>;
/** The library's hooks, by event (`hooks: { PreToolUse: [async (input) => …] }`). */
export type FunctionHooks = { [E in HookEvent]?: readonly HookFunction[] };

/** The fields of a hook's input its caller gives (the runner adds session, cwd and event name). */
export type HookFields = Omit<HookInput, 'session_id' | 'transcript_path' | 'cwd' | 'hook_event_name'>;

export interface HookRunnerOptions {
  /** The config's command hooks: a BullMQ worker's are its own config's, never a job's. */
  config: HooksConfig | undefined;
  functions?: FunctionHooks | undefined;
  place: CommandHookPlace;
  sessionId: string;
  transcriptPath?: string | undefined;
  logger?: Logger | undefined;
}

/**
 * The hooks of one host (a manager and its session, or a BullMQ worker): command hooks from its
 * config and the library's functions, run on the main thread. Every matching hook runs at once;
 * their answers are combined (hooks.ts). A hook that fails is logged and reported in the
 * verdict's `problems`; it never stops the event.
 */
export class HookRunner {
  readonly #options: HookRunnerOptions;

  constructor(options: HookRunnerOptions) {
    this.#options = options;
  }

  has(event: HookEvent): boolean {
    return (this.#options.config?.[event]?.length ?? 0) > 0 || (this.#options.functions?.[event]?.length ?? 0) > 0;
  }

  /** The job events with hooks here: a job's spec carries them, so its thread asks only for those. */
  jobEvents(): JobHookEvent[] {
    return JOB_HOOK_EVENTS.filter((event) => this.has(event));
  }

  async run(event: HookEvent, fields: HookFields, signal: AbortSignal): Promise<HookVerdict> {
    if (!this.has(event)) return {};
    const { place, sessionId, transcriptPath } = this.#options;
    const input: HookInput = { session_id: sessionId, transcript_path: transcriptPath ?? '', cwd: place.workspaceRoot, hook_event_name: event, ...fields };
    const subject = event === 'SubagentStart' || event === 'SubagentStop' ? fields.agent_type : fields.tool_name;
    const commands = (this.#options.config?.[event] ?? []).filter((hook) => hookMatches(hook.matcher, subject));
    const functions = this.#options.functions?.[event] ?? [];
    const verdicts = await Promise.all([
      ...commands.map((hook) => runCommandHook(hook, input, place, signal)),
      ...functions.map((fn, i) => runFunction(fn, i, input, signal)),
    ]);
    const verdict = combineVerdicts(verdicts);
    for (const problem of verdict.problems ?? []) this.#options.logger?.warn({ event, jobId: fields.job_id }, problem);
    return verdict;
  }

  /** The parent's tool hooks: PreToolUse and PostToolUse run here, at once. */
  toolHooks(): ToolHooks {
    return {
      preToolUse: (call, signal) => this.run('PreToolUse', { tool_name: call.name, tool_input: call.input, tool_use_id: call.callId }, signal),
      postToolUse: (call, signal) =>
        this.run('PostToolUse', { tool_name: call.name, tool_input: call.input, tool_use_id: call.callId, tool_response: call.response }, signal),
    };
  }

  /**
   * A job's `hook:<event>` host call: its verdict as the answer's JSON text. The job id is the
   * attempt's, never what the thread wrote; only the job events are run.
   */
  async answerCall(jobId: string, name: string, args: unknown, signal: AbortSignal): Promise<HostToolAnswer> {
    const event = name.slice(HOOK_CALL_PREFIX.length);
    if (!(JOB_HOOK_EVENTS as readonly string[]).includes(event))
      return { ok: false, code: 'TOOL_UNKNOWN', message: `${name} is not a hook event a job may run` };
    const fields = jobFields(args);
    const verdict = await this.run(event as JobHookEvent, { ...fields, job_id: jobId }, signal);
    return { ok: true, output: JSON.stringify(verdict) };
  }
}

/** The fields a job's thread may set, each of its type; anything else is dropped. */
function jobFields(args: unknown): HookFields {
  const raw = typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : {};
  const text = (key: string) => (typeof raw[key] === 'string' ? { [key]: raw[key] } : {});
  return {
    ...text('tool_name'),
    ...text('tool_use_id'),
    ...text('agent_id'),
    ...text('agent_type'),
    ...text('last_assistant_message'),
    ...(raw.tool_input !== undefined ? { tool_input: raw.tool_input } : {}),
    ...(raw.tool_response !== undefined ? { tool_response: raw.tool_response } : {}),
    ...(typeof raw.stop_hook_active === 'boolean' ? { stop_hook_active: raw.stop_hook_active } : {}),
  };
}

async function runFunction(fn: HookFunction, index: number, input: HookInput, signal: AbortSignal): Promise<HookVerdict> {
  try {
    const answer = await fn(input, { signal });
    return answer ? verdictOf(answer) : {};
  } catch (error) {
    return { problems: [`${input.hook_event_name} hook function #${index + 1} threw: ${errorMessage(error)}`] };
  }
}

/** Is this host call a hook's rather than a tool's? */
export function isHookCall(name: string): boolean {
  return name.startsWith(HOOK_CALL_PREFIX);
}

/** A host's hook runner: its config's command hooks (in its sandbox, from its workspace) and the library's functions. */
export function hookRunnerFor(
  config: ForkpoolConfig,
  functions: FunctionHooks | undefined,
  sessionId: string | undefined,
  logger: Logger | undefined,
): HookRunner {
  return new HookRunner({
    config: config.hooks,
    functions,
    place: { workspaceRoot: config.workspaceRoot, policy: toolPolicyFrom(config), env: process.env },
    sessionId: sessionId ?? randomUUID(),
    logger,
  });
}
