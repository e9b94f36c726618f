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
export const outputSchemaArg = spawnSpecInputFields.outputSchema.describe('JSON Schema the answer must match; you get JSON, not prose.');

/**
 * The spawn tool's arguments for a spawn's own spec (core-agent's `Spec`), bounded like the
 * library's. Each is checked at admission, whichever door the spawn came through: an unknown
 * tool, a tool outside the job's own, a model outside the allowed ones or a replace the config
 * does not allow is a tool error naming it, and nothing starts.
 */
export function spawnSpecArgs(offer: SpawnSpecOffer | undefined) {
  const models = offer?.models.map((m) => `"${m}"`).join(', ') || 'the configured ones';
  return {
    system_prompt: spawnSpecInputFields.systemPrompt.describe('Appended to its system prompt.'),
    replace_system_prompt: spawnSpecInputFields.replaceSystemPrompt.describe(
      offer?.mayReplacePrompt ? 'system_prompt replaces its prompt.' : 'Not allowed here.',
    ),
    tools: spawnSpecInputFields.tools.describe('A subset of its tools. Default all.'),
    extras: spawnSpecInputFields.extras.describe('More tools by name.'),
    model: spawnSpecInputFields.model.describe(`One of ${models}.`),
    scheduler: spawnSpecInputFields.scheduler.describe('"sleep": it gets schedule_next_turn; "exit_on_defer": ends deferred; "none"; "default".'),
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
