import { spawnSpecInputFields, type SpawnSpecInput } from './spawn-spec.js';

/*
 * In src/shared because both spawn tools use it: the parent's (src/main/session/background-tools.ts)
 * and a job's own, in its worker (src/worker/children.ts).
 */

/** What a spawn's own spec may choose from, as the spawn tool tells the model (the manager checks it again). */
export interface SpawnSpecOffer {
  /** The caller's own built-in tools: a fork's `tools` picks among them (an agent's, among its own). */
  tools: readonly string[];
  /** The models a spawn may name (`spawnableModels`). */
  models: readonly string[];
  /** `background.allowSystemPromptReplace`. */
  mayReplacePrompt: boolean;
  /** `background.allowOutputSchema`: the parent's spawn tool offers `output_schema` (else the argument is not there at all). */
  mayTypeOutput?: boolean;
}

/** The `output_schema` argument, offered only where {@link SpawnSpecOffer.mayTypeOutput} says so (it costs prompt bytes). */
export const outputSchemaArg = spawnSpecInputFields.outputSchema.describe(
  'Optional: a JSON Schema (e.g. {"type":"object","properties":{...},"required":[...]}) the job\'s answer must match; ' +
    'you then receive its value as JSON (data) instead of prose. Use it when you need a compact, structured answer.',
);

/**
 * The spawn tool's arguments for a spawn's own spec (core-agent's `Spec`), bounded like the
 * library's. Each is checked at admission, whichever door the spawn came through: an unknown
 * tool, a tool outside the job's own, a model outside the allowed ones or a replace the config
 * does not allow is a tool error naming it, and nothing starts.
 */
export function spawnSpecArgs(offer: SpawnSpecOffer | undefined) {
  const tools = offer?.tools.join(', ') || 'none';
  const models = offer?.models.map((m) => `"${m}"`).join(', ') || 'the configured ones';
  return {
    system_prompt: spawnSpecInputFields.systemPrompt.describe(
      "Optional instructions for this job's system prompt, appended to the background agent's own (e.g. a role, a focus, an answer format).",
    ),
    replace_system_prompt: spawnSpecInputFields.replaceSystemPrompt.describe(
      offer?.mayReplacePrompt
        ? 'Optional, default false: true makes system_prompt replace the background prompt instead of being appended.'
        : 'Not allowed by this configuration (a call with true is refused); system_prompt is always appended.',
    ),
    tools: spawnSpecInputFields.tools.describe(
      `Optional: give the job only these tools, a subset of yours (${tools}); for an agent, a subset of its own. Default: all of them.`,
    ),
    extras: spawnSpecInputFields.extras.describe('Optional: more tools by name for the job, beyond yours.'),
    model: spawnSpecInputFields.model.describe(`Optional: the model the job runs, one of ${models}. Default: yours (an agent: its own).`),
    scheduler: spawnSpecInputFields.scheduler.describe(
      'Optional: "sleep" gives the job schedule_next_turn(after, reason) to sleep between turns (a supervisor that scans, sleeps, scans); "exit_on_defer": the job ends deferred with its wake-up time; "none": no such tool; "default": the configured one.',
    ),
  };
}

/** The spec arguments as the manager's request fields, only those set. */
export function spawnSpecFromArgs(args: {
  system_prompt?: string | undefined;
  replace_system_prompt?: boolean | undefined;
  tools?: string[] | undefined;
  extras?: string[] | undefined;
  model?: string | undefined;
  scheduler?: string | undefined;
  output_schema?: Record<string, unknown> | undefined;
}): SpawnSpecInput {
  return {
    ...(args.system_prompt !== undefined ? { systemPrompt: args.system_prompt } : {}),
    ...(args.replace_system_prompt !== undefined ? { replaceSystemPrompt: args.replace_system_prompt } : {}),
    ...(args.tools !== undefined ? { tools: args.tools } : {}),
    ...(args.extras !== undefined ? { extras: args.extras } : {}),
    ...(args.model !== undefined ? { model: args.model } : {}),
    ...(args.scheduler !== undefined ? { scheduler: args.scheduler } : {}),
    ...(args.output_schema !== undefined ? { outputSchema: args.output_schema } : {}),
  };
}
