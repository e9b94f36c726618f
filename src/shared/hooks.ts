/**
 * Hooks in Claude Code's contract (docs/tools.md "Hooks"): the events, the config entry, the
 * tool-name matcher, and the verdict a hook's answer comes to. Pure: the main thread runs the
 * hooks (src/main/hooks); a job's thread asks for them over its port as host calls named
 * `hook:<event>` (see {@link HOOK_CALL_PREFIX}).
 */
import { z } from 'zod';

export const HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'SubagentStart', 'SubagentStop', 'Stop', 'UserPromptSubmit'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** The events a job's thread asks the main thread for (the others run on the main thread itself). */
export const JOB_HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'SubagentStart', 'SubagentStop'] as const satisfies readonly HookEvent[];
export type JobHookEvent = (typeof JOB_HOOK_EVENTS)[number];

/** A job's host call that runs hooks rather than a tool: `hook:PreToolUse`, … */
export const HOOK_CALL_PREFIX = 'hook:';

/** Claude Code's default hook timeout. */
export const DEFAULT_HOOK_TIMEOUT_MS = 60_000;

export const commandHookSchema = z.strictObject({
  /** A tool name (or agent name for SubagentStart/Stop): exact, `a|b`, a regular expression; `*` or empty: all. */
  matcher: z.string().max(1_000).default(''),
  /** Run with `sh -c`, the event's JSON on stdin. */
  command: z.string().min(1),
  /** Killed (its process group) after this long; the event goes on as if it had answered nothing. */
  timeoutMs: z.number().int().min(1).max(3_600_000).default(DEFAULT_HOOK_TIMEOUT_MS),
});
export type CommandHook = z.output<typeof commandHookSchema>;

export const hooksConfigSchema = z.strictObject(
  Object.fromEntries(HOOK_EVENTS.map((event) => [event, z.array(commandHookSchema).max(100).optional()])) as {
    [E in HookEvent]: z.ZodOptional<z.ZodArray<typeof commandHookSchema>>;
  },
);
export type HooksConfig = z.output<typeof hooksConfigSchema>;

/**
 * What a hook reads (its stdin as JSON; a library hook's argument): Claude Code's field names,
 * plus forkpool's `job_id`. Fields that do not apply to an event are absent.
 */
export interface HookInput {
  session_id: string;
  transcript_path: string;
  cwd: string;
  hook_event_name: HookEvent;
  /** The job the event belongs to; absent for the parent. */
  job_id?: string;
  tool_name?: string;
  tool_input?: unknown;
  tool_use_id?: string;
  tool_response?: unknown;
  prompt?: string;
  /** Stop and SubagentStop: true when a hook already sent the agent back once. */
  stop_hook_active?: boolean;
  /** SubagentStart/SubagentStop: the job's id and agent name. */
  agent_id?: string;
  agent_type?: string;
  /** SubagentStop and Stop: the answer it would end with. */
  last_assistant_message?: string;
}

/** What a library hook may return (as a command hook's stdout JSON may carry). */
export interface HookAnswer {
  decision?: 'block' | 'approve' | undefined;
  reason?: string | undefined;
  updatedInput?: unknown;
  additionalContext?: string | undefined;
  hookSpecificOutput?: { permissionDecision?: string; permissionDecisionReason?: string; updatedInput?: unknown; additionalContext?: string } | undefined;
}

/** Every matching hook's answer, combined: a block wins, the last `updatedInput` counts, contexts add up. */
export interface HookVerdict {
  block?: string;
  updatedInput?: unknown;
  additionalContext?: string;
  /** Hooks that crashed, timed out or answered nonsense: reported, never stopping the run. */
  problems?: string[];
}

/** The loop's way to its hooks (the parent's run them; a job's ask the main thread). */
export interface ToolHooks {
  preToolUse?(call: { name: string; callId: string; input: unknown }, signal: AbortSignal): Promise<HookVerdict>;
  postToolUse?(call: { name: string; callId: string; input: unknown; response: string }, signal: AbortSignal): Promise<HookVerdict>;
}

/** Claude Code's matcher: empty or `*` matches all; names and `|` lists exactly; anything else is a whole-name regular expression. */
export function hookMatches(matcher: string, name: string | undefined): boolean {
  if (matcher === '' || matcher === '*' || name === undefined) return true;
  if (/^[\w|-]+$/.test(matcher)) return matcher.split('|').includes(name);
  try {
    return new RegExp(`^(?:${matcher})$`).test(name);
  } catch {
    return false;
  }
}

/** A verdict's answer folded from one hook's answer (a command hook's stdout JSON, or a function's return). */
export function verdictOf(answer: HookAnswer): HookVerdict {
  const specific = answer.hookSpecificOutput ?? {};
  const denied = specific.permissionDecision === 'deny';
  const block = answer.decision === 'block' || denied ? (specific.permissionDecisionReason ?? answer.reason ?? 'blocked by a hook') : undefined;
  const updatedInput = specific.updatedInput ?? answer.updatedInput;
  const additionalContext = specific.additionalContext ?? answer.additionalContext;
  return {
    ...(block !== undefined ? { block } : {}),
    ...(updatedInput !== undefined ? { updatedInput } : {}),
    ...(typeof additionalContext === 'string' && additionalContext !== '' ? { additionalContext } : {}),
  };
}

/** Several hooks' verdicts as one, in config order. */
export function combineVerdicts(verdicts: readonly HookVerdict[]): HookVerdict {
  const blocks = verdicts.flatMap((v) => (v.block !== undefined ? [v.block] : []));
  const contexts = verdicts.flatMap((v) => (v.additionalContext !== undefined ? [v.additionalContext] : []));
  const problems = verdicts.flatMap((v) => v.problems ?? []);
  const updated = verdicts.filter((v) => v.updatedInput !== undefined).at(-1);
  return {
    ...(blocks.length > 0 ? { block: blocks.join('\n') } : {}),
    ...(updated ? { updatedInput: updated.updatedInput } : {}),
    ...(contexts.length > 0 ? { additionalContext: contexts.join('\n') } : {}),
    ...(problems.length > 0 ? { problems } : {}),
  };
}
