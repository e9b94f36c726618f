import { z } from 'zod';
import { ForkpoolError, ToolError, errorMessage } from '../../shared/errors.js';
import type { ToolContext, ToolDefinition } from '../../shared/tools/types.js';
import type { LoopToolContext } from '../../shared/tool-loop.js';
import { jobNameSchema } from '../../shared/protocol.js';
import { budgetLimitsSchema } from '../../shared/budget.js';
import type { JobHandle, SpawnRequest } from '../jobs/manager.js';
import { joinSchema } from '../../shared/scheduling-config.js';
import { WORKSPACE_MODES } from '../jobs/worktrees.js';
import { outputSchemaArg, spawnSpecArgs, spawnSpecFromArgs, type SpawnSpecOffer } from '../../shared/spawn-spec-args.js';

/** What the parent's background tools need from the session that owns them. */
export interface BackgroundToolHost {
  /** May wait for a worktree job's worktree (manager.spawnReady). */
  spawnFromAgent(request: SpawnToolRequest): JobHandle | Promise<JobHandle>;
  cancelJob(id: string): JobHandle;
  /** The peers the spawn tool offers (the caller's allow-list, `agentTools`), with their descriptions. */
  agents?: ReadonlyArray<{ name: string; description: string }>;
  /** What a spawn's own spec may choose from (system_prompt, tools, model), for the tool's description. */
  spec?: SpawnSpecOffer;
  /** The result of a job an identical spawn reused (see docs/delivery.md "De-duplication"). */
  reusedResult?(id: string): string;
}

/** A spawn as the tool asks for it: the manager's request, less what the session fills in (its role, wave and summary). */
export type SpawnToolRequest = Omit<SpawnRequest, 'role' | 'wave' | 'parentSummary'> & { fullContext: boolean };

/** How "refers to it" is decided: src/main/session/speculation.ts (mentions), docs/delivery.md "Speculative jobs". */
const SPECULATIVE_ARG =
  'Optional, default false. True for a guess you may not need: it runs only on what no real job needs (a real job waiting for a slot or budget cancels it), ' +
  'and it is cancelled when this turn ends unless you refer to it first: its job id or name in what you say or in any later tool call of this turn ' +
  '(check_background_agent, wait, send, read...). Referred to, it is an ordinary job and its result is delivered as usual; cancelled, it is never reported to you.';

const nameArg = jobNameSchema.describe('Optional short name (no spaces), unique among your running jobs; usable instead of the job id in the other tools.');

const baseSpawnArgs = z.strictObject({
  task: z
    .string()
    .trim()
    .min(1)
    .max(100_000)
    .describe('The self-contained question or task for the background agent. Include everything it needs — it does not see your conversation.'),
  label: z.string().trim().min(1).max(200).describe('Short human-readable label for status display, e.g. "analyze level-gen code".'),
  full_context: z
    .boolean()
    .optional()
    .describe('Default false. True only when the task depends on what you have been doing: the job then also gets a capped summary of this session.'),
  name: nameArg,
  join: joinSchema
    .optional()
    .describe(
      'Optional, for the whole batch you spawn this turn: {"quorum": k} to be told once k of its jobs have ended, or {"deadlineSeconds": s} ' +
        'to be told after s seconds with whatever has ended. The rest are delivered later, each once. Default: when all have ended.',
    ),
  budget: budgetLimitsSchema
    .optional()
    .describe(
      'Optional, to spend less than the agent may: maxTurns (model calls), maxTokens, maxCostUsd, maxWallclockMinutes. ' +
        "Each value must be at or below the agent's own limit (list_background_agents shows them); above it the spawn is refused.",
    ),
  workspace: z
    .enum(WORKSPACE_MODES)
    .optional()
    .describe(
      'Optional, for a job that writes files: "worktree" runs it in a fresh git worktree on its own branch forkpool/<job id>, ' +
        'which you merge, keep or drop afterwards with background_worktree; "shared" works in your workspace. Default: the configured one.',
    ),
  speculative: z.boolean().optional().describe(SPECULATIVE_ARG),
});

function baseSpecArgs(spec: SpawnSpecOffer | undefined) {
  return baseSpawnArgs.extend(spawnSpecArgs(spec));
}

/**
 * With an allow-list of peers, `agent` is an enum of their names: a name outside it is a tool
 * error and nothing starts; with none, there is no `agent` argument.
 */
function spawnArgsFor(agents: ReadonlyArray<{ name: string; description: string }>, spec: SpawnSpecOffer | undefined) {
  // `output_schema` only where the config allows it (background.allowOutputSchema): read through SpawnToolArgs.
  const withSpec = spec?.mayTypeOutput
    ? (baseSpawnArgs.extend({ ...spawnSpecArgs(spec), output_schema: outputSchemaArg }) as unknown as ReturnType<typeof baseSpecArgs>)
    : baseSpecArgs(spec);
  if (agents.length === 0) return withSpec;
  const names = agents.map((a) => a.name) as [string, ...string[]];
  return withSpec.extend({
    agent: z
      .enum(names)
      .optional()
      .describe(`Optional: run a configured agent instead of a copy of yourself. ${agents.map((a) => `"${a.name}": ${a.description}`).join('; ')}.`),
  });
}

const jobRef = z.string().trim().min(1).max(100).describe('The job id spawn_background_agent returned (e.g. "bg-3"), or the name you gave it.');
const cancelArgs = z.strictObject({ job_id: jobRef });

/** The seed's `spawn_background_agent` and `cancel_background_agent`, for the parent only. */
export function backgroundTools(host: BackgroundToolHost): ToolDefinition[] {
  const spawnArgs = spawnArgsFor(host.agents ?? [], host.spec);
  const spawn: ToolDefinition<z.output<ReturnType<typeof spawnArgsFor>> & { agent?: string | undefined; output_schema?: Record<string, unknown> }> = {
    name: 'spawn_background_agent',
    description:
      'Fork an independent copy of yourself to research a narrow, self-contained question in the background — reading files, grepping, ' +
      'running commands — without using up your own context. You are notified with a summary when it completes; you do not block on it ' +
      'and must not fabricate a result before that notification arrives.',
    parameters: spawnArgs,
    gated: false,
    background: true,
    async run(args, ctx) {
      // The job's events and record name the call that started it, as an agent_<name> call's do.
      const callId = (ctx as ToolContext & Partial<LoopToolContext>).callId;
      let handle: JobHandle;
      try {
        handle = await host.spawnFromAgent({
          task: args.task,
          label: args.label,
          fullContext: args.full_context ?? false,
          ...(args.agent !== undefined ? { agent: args.agent } : {}),
          ...(args.name !== undefined ? { name: args.name } : {}),
          ...(args.join !== undefined ? { join: args.join } : {}),
          ...(args.budget !== undefined ? { budget: args.budget } : {}),
          ...(args.workspace !== undefined ? { workspace: args.workspace } : {}),
          ...spawnSpecFromArgs(args),
          ...(callId ? { parentToolId: callId } : {}),
          ...(args.speculative ? { speculative: true } : {}),
        });
      } catch (error) {
        throw asToolError(error, 'spawn_background_agent');
      }
      if (handle.joined === 'attached') {
        return (
          `Joined background agent ${handle.id} ("${handle.label}"): an identical task for the same agent and model is already ${handle.state}, so no new agent was started. ` +
          'Its result will be delivered to you once, in a <background_results> block at the start of a later turn. Do not guess it.'
        );
      }
      if (handle.joined === 'reused') {
        const age = ((handle.ageMs ?? 0) / 1000).toFixed(1);
        return `Background agent ${handle.id} ("${handle.label}") answered this identical task ${age} s ago, so it was not run again. Its result (as of ${age} s ago):\n${host.reusedResult?.(handle.id) ?? '(see check_background_agent)'}`;
      }
      return (
        `Started ${args.speculative ? 'speculative ' : ''}background agent ${handle.id}${args.name ? ` (name "${args.name}")` : ''}${args.agent ? ` running agent "${args.agent}"` : ''} ("${handle.label}"), now ${handle.state}. ` +
        (args.speculative
          ? `It is cancelled, unreported, when this turn ends unless you refer to ${handle.id}${args.name ? ` or "${args.name}"` : ''} before then. `
          : '') +
        'You will be told when it ends, in a <background_results> block at the start of a later turn. Do not guess its result.'
      );
    },
  };
  const cancel: ToolDefinition<z.output<typeof cancelArgs>> = {
    name: 'cancel_background_agent',
    description: 'Stop a background agent you started, by its job id. Safe to call twice; the job ends as cancelled.',
    parameters: cancelArgs,
    gated: false,
    async run(args) {
      try {
        const handle = host.cancelJob(args.job_id);
        return handle.state === 'ended' ? `Job ${handle.id} had already ended.` : `Cancel requested for job ${handle.id} ("${handle.label}").`;
      } catch (error) {
        throw asToolError(error, 'cancel_background_agent');
      }
    },
  };
  return [spawn, cancel];
}

/** A refusal from the manager, as the tool error the model reads (its code kept). */
export function asToolError(error: unknown, tool: string): ToolError {
  if (error instanceof ToolError) return error;
  const code = error instanceof ForkpoolError ? error.code : 'TOOL_FAILED';
  return new ToolError(code, tool, errorMessage(error));
}
