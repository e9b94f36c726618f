import { z } from 'zod';
import { configForAgent } from './agents.js';
import type { ForkpoolConfig } from './config.js';
import { MAX_TIMER_MS } from './config-bounds.js';
import { BUILTIN_TOOL_NAMES, SPAWN_SPEC_LIMITS } from './fixed-limits.js';
import { TOOL_NAME_PATTERN } from './tool-contract.js';
import { ForkpoolError } from './errors.js';
import { ACTIVE_SCHEDULERS, resolveScheduler, type ActiveScheduler } from './scheduler.js';
import { checkOutputSchema, outputSchemaWire, type OutputSchema } from './output-schema.js';

/**
 * A spawn's own spec (core-agent's `Spec`): a system prompt appended to the background baseline
 * (or replacing it where `background.allowSystemPromptReplace` says so), a subset of the
 * built-in tools the job would have anyway, and a model among those the config allows. The
 * main thread checks it once at admission ({@link checkSpawnSpec}), whichever door the spawn
 * came through; the worker applies it from the job's spec alone ({@link applySpawnSpec}).
 */
export interface SpawnSpec {
  /** Appended to the background baseline prompt (after the agent's own), or replacing it all. */
  systemPrompt?: string;
  replaceSystemPrompt?: boolean;
  /** Catalog tools by name: the job gets only these of its own (the port tools, report_alert and nested spawns, stay). */
  tools?: string[];
  /** Catalog tools added to the job's set (core-agent's `Extras`), after `tools` narrowed it. */
  extras?: string[];
  model?: string;
  /** Its between-turn scheduler, resolved at admission (scheduler.ts); absent: none (no schedule_next_turn tool). */
  scheduler?: ActiveScheduler;
  /** The JSON Schema its final answer must match (docs/delivery.md "Typed results"); the value becomes the record's `data`. */
  outputSchema?: OutputSchema;
  /** Its own `turnTimeoutMs` (0: off), over its agent's and the config's. */
  turnTimeoutMs?: number;
}

/** A spawn request's spec fields as they come in (tool names not yet checked): one schema for the library, the tool and HTTP. */
export const spawnSpecInputFields = {
  systemPrompt: z.string().trim().min(1).max(SPAWN_SPEC_LIMITS.systemPromptMaxChars).optional(),
  replaceSystemPrompt: z.boolean().optional(),
  tools: z.array(z.string().trim().min(1).max(SPAWN_SPEC_LIMITS.toolNameMaxChars)).max(SPAWN_SPEC_LIMITS.maxToolNames).optional(),
  extras: z.array(z.string().trim().min(1).max(SPAWN_SPEC_LIMITS.toolNameMaxChars)).max(SPAWN_SPEC_LIMITS.maxToolNames).optional(),
  model: z.string().trim().min(1).max(SPAWN_SPEC_LIMITS.modelMaxChars).optional(),
  /** default, sleep, exit_on_defer or none; another name is SCHEDULER_UNKNOWN at admission (a string here, so the error says so). */
  scheduler: z.string().max(40).optional(),
  outputSchema: outputSchemaWire.optional(),
  turnTimeoutMs: z.number().int().min(0).max(MAX_TIMER_MS).optional(),
};
/** A spawn's spec as asked for: the tools by any name (checked by {@link checkSpawnSpec}). */
export interface SpawnSpecInput {
  systemPrompt?: string;
  replaceSystemPrompt?: boolean;
  tools?: string[];
  extras?: string[];
  model?: string;
  scheduler?: string;
  outputSchema?: OutputSchema;
  turnTimeoutMs?: number;
}

/** Its fields as zod outputs them: each may be present and undefined. */
type Loose<T> = { [K in keyof T]?: T[K] | undefined };

/** The same fields on a job's spec, as the worker checks them (the names were checked at admission). */
export const spawnSpecWireFields = {
  systemPrompt: z.string().min(1).max(SPAWN_SPEC_LIMITS.systemPromptMaxChars).optional(),
  replaceSystemPrompt: z.boolean().optional(),
  tools: z.array(z.string().regex(TOOL_NAME_PATTERN)).max(SPAWN_SPEC_LIMITS.maxToolNames).optional(),
  extras: z.array(z.string().regex(TOOL_NAME_PATTERN)).max(SPAWN_SPEC_LIMITS.maxToolNames).optional(),
  model: z.string().min(1).max(SPAWN_SPEC_LIMITS.modelMaxChars).optional(),
  scheduler: z.enum(ACTIVE_SCHEDULERS).optional(),
  outputSchema: outputSchemaWire.optional(),
  turnTimeoutMs: z.number().int().min(0).max(MAX_TIMER_MS).optional(),
};

/** The models a spawn may name: `background.spawnModels`, else the top-level model, every agent's and every key of `models`. */
export function spawnableModels(config: ForkpoolConfig): string[] {
  if (config.background.spawnModels !== undefined) return [...new Set(config.background.spawnModels)];
  const agentModels = Object.values(config.agents).flatMap((agent) => (agent.model === undefined ? [] : [agent.model]));
  return [...new Set([config.model, ...agentModels, ...Object.keys(config.models)])];
}

/**
 * Checks a spawn's spec for a job of `agent` (undefined: a fork of the caller) and returns it
 * normalized (tools de-duplicated), only the fields that are set. Throws a ForkpoolError that
 * names the field: TOOL_UNKNOWN, TOOL_NOT_ALLOWED, MODEL_NOT_ALLOWED, PROMPT_REPLACE_NOT_ALLOWED, SCHEDULER_UNKNOWN,
 * or TOOL_ARGUMENTS_INVALID for `replaceSystemPrompt` without a prompt or a bad `outputSchema`.
 */
export function checkSpawnSpec(
  config: ForkpoolConfig,
  agent: string | undefined,
  input: Loose<SpawnSpecInput>,
  known: (name: string) => boolean = isBuiltinName,
): SpawnSpec {
  const spec: SpawnSpec = {};
  if (input.replaceSystemPrompt === true) {
    if (input.systemPrompt === undefined)
      throw new ForkpoolError('TOOL_ARGUMENTS_INVALID', 'replaceSystemPrompt: true needs a systemPrompt to replace the baseline with');
    if (!config.background.allowSystemPromptReplace) {
      throw new ForkpoolError(
        'PROMPT_REPLACE_NOT_ALLOWED',
        'replaceSystemPrompt: this config does not let a spawn replace the background system prompt (background.allowSystemPromptReplace is false); leave it out to append the prompt instead',
      );
    }
    spec.replaceSystemPrompt = true;
  }
  if (input.systemPrompt !== undefined) spec.systemPrompt = input.systemPrompt;
  if (input.tools !== undefined) spec.tools = checkTools(configForAgent(config, agent).tools, input.tools, agent, known);
  if (input.extras !== undefined) {
    for (const name of input.extras)
      if (!known(name)) throw new ForkpoolError('TOOL_UNKNOWN', `extras: "${name}" is not a tool of this catalog (TOOL_UNKNOWN)`);
    spec.extras = [...new Set(input.extras)];
  }
  if (input.model !== undefined) {
    const allowed = spawnableModels(config);
    if (!allowed.includes(input.model)) {
      throw new ForkpoolError('MODEL_NOT_ALLOWED', `model: "${input.model}" is not allowed for a spawn; allowed: ${allowed.map((m) => `"${m}"`).join(', ')}`);
    }
    spec.model = input.model;
  }
  const scheduler = resolveScheduler(input.scheduler, config.background.scheduler);
  if (scheduler !== undefined) spec.scheduler = scheduler;
  if (input.outputSchema !== undefined) spec.outputSchema = checkOutputSchema(input.outputSchema, 'outputSchema');
  if (input.turnTimeoutMs !== undefined) spec.turnTimeoutMs = input.turnTimeoutMs;
  return spec;
}

function checkTools(own: readonly string[], names: readonly string[], agent: string | undefined, known: (name: string) => boolean): string[] {
  const whose = agent === undefined ? "the caller's" : `agent "${agent}"'s`;
  const ownList = own.length > 0 ? own.join(', ') : 'none';
  for (const name of names) {
    if (!known(name)) {
      throw new ForkpoolError('TOOL_UNKNOWN', `tools: "${name}" is not a built-in tool or a tool of this catalog; ${whose} tools are: ${ownList}`);
    }
    if (!own.includes(name)) {
      throw new ForkpoolError('TOOL_NOT_ALLOWED', `tools: "${name}" is not among ${whose} tools (${ownList}); a spawn may only narrow them`);
    }
  }
  return [...new Set(names)];
}

function isBuiltinName(name: string): boolean {
  return (BUILTIN_TOOL_NAMES as readonly string[]).includes(name);
}

/** The config a job runs with: its agent's (see configForAgent), then its spawn's model, tool subset and turn timeout. */
export function applySpawnSpec(config: ForkpoolConfig, spec: SpawnSpec): ForkpoolConfig {
  if (spec.model === undefined && spec.tools === undefined && spec.extras === undefined && spec.turnTimeoutMs === undefined) return config;
  const tools = spec.tools;
  // Only ever a narrowing: a BullMQ worker's own `tools` may already be narrower than the spawner's.
  const narrowed = tools !== undefined ? config.tools.filter((tool) => tools.includes(tool)) : config.tools;
  return {
    ...config,
    ...(spec.model !== undefined ? { model: spec.model } : {}),
    ...(spec.turnTimeoutMs !== undefined ? { turnTimeoutMs: spec.turnTimeoutMs } : {}),
    tools: spec.extras !== undefined ? [...new Set([...narrowed, ...spec.extras])] : narrowed,
  };
}

/** The tool names a job of `agent` with this spawn spec is offered (its record lists them; the worker builds them). */
export function offeredTools(config: ForkpoolConfig, agent: string | undefined, spec: SpawnSpec): string[] {
  return applySpawnSpec(configForAgent(config, agent), spec).tools;
}

/** The job's system prompt (baseline and agent's already joined) with its spawn's own appended, or replacing it. */
export function spawnSystemPrompt(prompt: string, spec: SpawnSpec): string {
  if (spec.systemPrompt === undefined) return prompt;
  return spec.replaceSystemPrompt ? spec.systemPrompt : `${prompt}\n\n${spec.systemPrompt}`;
}

/** The spec fields of a request (an HTTP body, a tool's arguments), only those set. */
export function spawnSpecOf(source: Loose<SpawnSpecInput>): SpawnSpecInput {
  return {
    ...(source.systemPrompt !== undefined ? { systemPrompt: source.systemPrompt } : {}),
    ...(source.replaceSystemPrompt !== undefined ? { replaceSystemPrompt: source.replaceSystemPrompt } : {}),
    ...(source.tools !== undefined ? { tools: source.tools } : {}),
    ...(source.extras !== undefined ? { extras: source.extras } : {}),
    ...(source.model !== undefined ? { model: source.model } : {}),
    ...(source.scheduler !== undefined ? { scheduler: source.scheduler } : {}),
    ...(source.outputSchema !== undefined ? { outputSchema: source.outputSchema } : {}),
    ...(source.turnTimeoutMs !== undefined ? { turnTimeoutMs: source.turnTimeoutMs } : {}),
  };
}
