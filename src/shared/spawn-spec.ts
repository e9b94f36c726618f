import { z } from 'zod';
import { configForAgent } from './agents.js';
import type { ForkpoolConfig } from './config.js';
import { BUILTIN_TOOL_NAMES, SPAWN_SPEC_LIMITS, type BuiltinToolName } from './defaults.js';
import { ForkpoolError } from './errors.js';

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
  /** Built-in tools by name: the job gets only these (the port tools, report_alert and nested spawns, stay). */
  tools?: BuiltinToolName[];
  model?: string;
}

/** A spawn request's spec fields as they come in (tool names not yet checked): one schema for the library, the tool and HTTP. */
export const spawnSpecInputFields = {
  systemPrompt: z.string().trim().min(1).max(SPAWN_SPEC_LIMITS.systemPromptMaxChars).optional(),
  replaceSystemPrompt: z.boolean().optional(),
  tools: z
    .array(z.string().trim().min(1).max(SPAWN_SPEC_LIMITS.toolNameMaxChars))
    .max(BUILTIN_TOOL_NAMES.length * 4)
    .optional(),
  model: z.string().trim().min(1).max(SPAWN_SPEC_LIMITS.modelMaxChars).optional(),
};
/** A spawn's spec as asked for: the tools by any name (checked by {@link checkSpawnSpec}). */
export interface SpawnSpecInput {
  systemPrompt?: string;
  replaceSystemPrompt?: boolean;
  tools?: string[];
  model?: string;
}

/** Its fields as zod outputs them: each may be present and undefined. */
type Loose<T> = { [K in keyof T]?: T[K] | undefined };

/** The same fields on a job's spec, as the worker checks them (the names were checked at admission). */
export const spawnSpecWireFields = {
  systemPrompt: z.string().min(1).max(SPAWN_SPEC_LIMITS.systemPromptMaxChars).optional(),
  replaceSystemPrompt: z.boolean().optional(),
  tools: z.array(z.enum(BUILTIN_TOOL_NAMES)).max(BUILTIN_TOOL_NAMES.length).optional(),
  model: z.string().min(1).max(SPAWN_SPEC_LIMITS.modelMaxChars).optional(),
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
 * names the field: TOOL_UNKNOWN, TOOL_NOT_ALLOWED, MODEL_NOT_ALLOWED, PROMPT_REPLACE_NOT_ALLOWED,
 * or TOOL_ARGUMENTS_INVALID for `replaceSystemPrompt` without a prompt.
 */
export function checkSpawnSpec(config: ForkpoolConfig, agent: string | undefined, input: Loose<SpawnSpecInput>): SpawnSpec {
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
  if (input.tools !== undefined) spec.tools = checkTools(configForAgent(config, agent).tools, input.tools, agent);
  if (input.model !== undefined) {
    const allowed = spawnableModels(config);
    if (!allowed.includes(input.model)) {
      throw new ForkpoolError('MODEL_NOT_ALLOWED', `model: "${input.model}" is not allowed for a spawn; allowed: ${allowed.map((m) => `"${m}"`).join(', ')}`);
    }
    spec.model = input.model;
  }
  return spec;
}

function checkTools(own: readonly BuiltinToolName[], names: readonly string[], agent: string | undefined): BuiltinToolName[] {
  const whose = agent === undefined ? "the caller's" : `agent "${agent}"'s`;
  const ownList = own.length > 0 ? own.join(', ') : 'none';
  for (const name of names) {
    if (!(BUILTIN_TOOL_NAMES as readonly string[]).includes(name)) {
      throw new ForkpoolError('TOOL_UNKNOWN', `tools: "${name}" is not a built-in tool; ${whose} tools are: ${ownList}`);
    }
    if (!own.includes(name as BuiltinToolName)) {
      throw new ForkpoolError('TOOL_NOT_ALLOWED', `tools: "${name}" is not among ${whose} tools (${ownList}); a spawn may only narrow them`);
    }
  }
  return [...new Set(names as BuiltinToolName[])];
}

/** The config a job runs with: its agent's (see configForAgent), then its spawn's model and tool subset. */
export function applySpawnSpec(config: ForkpoolConfig, spec: SpawnSpec): ForkpoolConfig {
  if (spec.model === undefined && spec.tools === undefined) return config;
  const tools = spec.tools;
  return {
    ...config,
    ...(spec.model !== undefined ? { model: spec.model } : {}),
    // Only ever a narrowing: a BullMQ worker's own `tools` may already be narrower than the spawner's.
    ...(tools !== undefined ? { tools: config.tools.filter((tool) => tools.includes(tool)) } : {}),
  };
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
    ...(source.model !== undefined ? { model: source.model } : {}),
  };
}
