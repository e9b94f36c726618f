/**
 * A configured peer agent's schema (`agents.<name>` in the config), and the field schemas it
 * shares with the top level (config-schema.ts): the wire an endpoint speaks, Anthropic thinking,
 * a catalog tool's name, a tool module.
 */
import { z } from 'zod';
import { modelUrlSchema } from './model-url.js';
import { TOOL_NAME_PATTERN } from './tool-contract.js';
import { budgetLimitsSchema } from './budget.js';
import { mcpServersSchema } from './mcp-config.js';
import { outputSchemaConfig, STRUCTURED_OUTPUT_MODES } from './output-schema.js';
import { MAX_DEPTH, timerMs } from './config-bounds.js';

/** A catalog tool's name (see tool-contract.ts): checked against the catalog when a manager or session starts. */
export const toolNameSchema = z.string().regex(TOOL_NAME_PATTERN, 'a tool name: letters, digits, "_" or "-", at most 64');
/** A tool module: resolved to an absolute path by loadConfig (relative to the config file). */
export const toolModuleSchema = z.string().min(1).max(4_096);

export const MODEL_APIS = ['chat', 'responses', 'anthropic'] as const;
/** The wire a model endpoint speaks (src/shared/wires/). */
export const modelApiSchema = z.enum(MODEL_APIS);

/**
 * Anthropic extended thinking (the `anthropic` wire only; the others ignore it): each request
 * sends `thinking: {type: "enabled", budget_tokens}`. The budget is part of `max_tokens` and must
 * stay below it (the API refuses otherwise); Anthropic's own minimum is 1,024.
 */
export const thinkingSchema = z.strictObject({ budgetTokens: z.number().int().min(1024).max(10_000_000) });
export type ModelApi = z.output<typeof modelApiSchema>;

/** An agent name: it becomes part of a tool name (`agent_<name>`), so it stays short and plain. */
export const AGENT_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;
export const AGENT_NAME_EXPECTED = 'an agent name: lower-case letter first, then letters, digits, "_" or "-" (at most 32)';

/**
 * A configured peer agent (core-agent's catalog): a job that runs it uses its model, endpoint,
 * prompt, tools and limits instead of a fork of the parent. Unset fields come from the parent.
 */
export const agentSchema = z.strictObject({
  /** Shown to the parent's model in the spawn tool and the `agent_<name>` tool. */
  description: z.string().trim().min(1).max(1_000),
  model: z.string().min(1).optional(),
  baseUrl: modelUrlSchema.optional(),
  /** The wire this agent's endpoint speaks; unset: the parent's `api`. */
  api: modelApiSchema.optional(),
  /** Never printed, logged or put in an event. Without it, the parent's key is used only on the parent's endpoint. */
  apiKey: z.string().min(1).optional(),
  /** Appended to the background baseline prompt, unless `replaceSystemPrompt`. */
  systemPrompt: z.string().min(1).max(50_000).optional(),
  replaceSystemPrompt: z.boolean().default(false),
  /** Catalog tools by name (built-in, host, module, MCP); unset: the parent's `tools`. */
  tools: z.array(toolNameSchema).optional(),
  /** Tool modules of this agent's own, besides the config's `toolModules` (resolved like them). */
  toolModules: z.array(toolModuleSchema).optional(),
  /**
   * Deprecated: the old name of `budget.maxTurns` for this agent's jobs. Parsing moves it there
   * (with a warning); setting both to different values is a config error.
   */
  maxIterations: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .optional()
    .meta({ deprecated: true, description: "Deprecated: the old name of this agent's budget.maxTurns (read as it, with a warning)." }),
  temperature: z.number().min(0).max(2).optional(),
  /** `max_tokens` of this agent's model requests; unset: the top-level `maxTokens`. */
  maxTokens: z.number().int().min(1).max(10_000_000).optional(),
  /** This agent's Anthropic extended thinking; unset: the top-level `thinking`. */
  thinking: thinkingSchema.optional(),
  /** Overrides `background.maxDepth` for jobs of this agent (and what they may spawn). */
  maxDepth: z.number().int().min(1).max(MAX_DEPTH).optional(),
  /** This agent's job budgets; unset fields come from `background.budget`. A spawn may only tighten them. */
  budget: budgetLimitsSchema.optional(),
  /** MCP servers of this agent's jobs, besides the top-level ones (docs/tools.md "MCP servers"). */
  mcpServers: mcpServersSchema.optional(),
  /** Default true. False: its `agent_<name>` tool has no `background` parameter (the call always waits for the answer). */
  background: z.boolean().optional(),
  /** A JSON Schema this agent's jobs answer with: their value is the record's `data` (docs/delivery.md "Typed results"); a spawn's own wins. */
  outputSchema: outputSchemaConfig.optional(),
  /** How its typed jobs are bound on its endpoint; unset: the config's `structuredOutput`. */
  structuredOutput: z.enum(STRUCTURED_OUTPUT_MODES).optional(),
  /** Overrides the config's `approvals` for this agent's jobs. */
  approvals: z.enum(['deny', 'ask']).optional(),
  /** Overrides the config's `turnTimeoutMs` for this agent's jobs (0: off); a spawn's own wins. */
  turnTimeoutMs: timerMs(0).optional(),
});
export type AgentConfig = z.output<typeof agentSchema>;
