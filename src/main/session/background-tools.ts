import { z } from 'zod';
import { ForkpoolError, ToolError, errorMessage } from '../../shared/errors.js';
import type { ToolContext, ToolDefinition } from '../../shared/tools/types.js';
import type { LoopToolContext } from '../../shared/tool-loop.js';
import { jobNameSchema } from '../../shared/protocol.js';
import { budgetLimitsSchema } from '../../shared/budget.js';
import type { JobHandle, SpawnRequest } from '../jobs/manager.js';
import { SPAWN_EXECUTORS } from '../jobs/manager-api.js';
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
  /** The manager has a remote executor (BackgroundManagerOptions.remote): the spawn tool takes `executor`, and `spawn_remote_agent` is offered. */
  remote?: boolean;
  /** The result of a job an identical spawn reused (see docs/delivery.md "De-duplication"). */
  reusedResult?(id: string): string;
}

/** A spawn as the tool asks for it: the manager's request, less what the session fills in (its role, wave and summary). */
export type SpawnToolRequest = Omit<SpawnRequest, 'role' | 'wave' | 'parentSummary'> & { fullContext: boolean };

/** How "refers to it" is decided: src/main/session/speculation.ts (mentions), docs/delivery.md "Speculative jobs". */
const SPECULATIVE_ARG = 'A guess you may not need: runs on spare capacity; cancelled unreported at turn end unless you mention its id or name.';

const nameArg = jobNameSchema.describe('Unique name, usable as job id.');

const baseSpawnArgs = z.strictObject({
  task: z.string().trim().min(1).max(100_000).describe('Self-contained: it does not see this conversation.'),
  label: z.string().trim().min(1).max(200),
  full_context: z.boolean().optional().describe('Also send a summary of this session.'),
  name: nameArg,
  join: joinSchema.optional().describe("This turn's batch: be told after k ended or s seconds, not all."),
  budget: budgetLimitsSchema.optional().describe("Lower limits than the agent's own."),
  workspace: z.enum(WORKSPACE_MODES).optional().describe('"worktree": own git branch; see background_worktree.'),
  speculative: z.boolean().optional().describe(SPECULATIVE_ARG),
});

/**
 * With an allow-list of peers, `agent` is an enum of their names: a name outside it is a tool
 * error and nothing starts; with none, there is no `agent` argument.
 */
function spawnArgsFor(agents: ReadonlyArray<{ name: string; description: string }>, spec: SpawnSpecOffer | undefined, remote: boolean) {
  // `output_schema` only where the config allows it (background.allowOutputSchema), `executor` only with a remote runner.
  const withSpec = baseSpawnArgs
    .extend(spawnSpecArgs(spec))
    .extend(remote ? { executor: executorArg } : {})
    .extend(spec?.mayTypeOutput ? { output_schema: outputSchemaArg } : {});
  if (agents.length === 0) return withSpec;
  const names = agents.map((a) => a.name) as [string, ...string[]];
  return withSpec.extend({
    agent: z
      .enum(names)
      .optional()
      .describe(`Run a configured agent, not a copy of you: ${agents.map((a) => `"${a.name}": ${a.description}`).join('; ')}.`),
  });
}

const executorArg = z.enum(SPAWN_EXECUTORS).optional().describe('"remote": on the configured remote runner. Default "local".');

const jobRef = z.string().trim().min(1).max(100);
const cancelArgs = z.strictObject({ job_id: jobRef });

/** The seed's `spawn_background_agent` and `cancel_background_agent`, for the parent only. */
export function backgroundTools(host: BackgroundToolHost): ToolDefinition[] {
  const remote = host.remote === true;
  const spawn = spawnTool(host, 'spawn_background_agent', spawnArgsFor(host.agents ?? [], host.spec, remote), undefined);
  const cancel: ToolDefinition<z.output<typeof cancelArgs>> = {
    name: 'cancel_background_agent',
    description: 'Cancel a background job.',
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
  if (!remote) return [spawn, cancel];
  // The seed's spawn_remote_agent: the same spawn, always on the remote runner (a refusing one answers with its reason).
  const spawnRemote = spawnTool(host, 'spawn_remote_agent', spawnArgsFor(host.agents ?? [], host.spec, false), 'remote');
  return [spawn, spawnRemote, cancel];
}

type SpawnArgs = z.output<ReturnType<typeof spawnArgsFor>> & {
  agent?: string | undefined;
  executor?: 'local' | 'remote' | undefined;
  output_schema?: Record<string, unknown>;
};

const SPAWN_DESCRIPTION = 'Start a copy of yourself on a self-contained question in the background. Its result comes in a later turn; never guess it.';

/** spawn_background_agent, or (`forced: "remote"`) spawn_remote_agent. */
function spawnTool(
  host: BackgroundToolHost,
  toolName: string,
  parameters: ReturnType<typeof spawnArgsFor>,
  forced: 'remote' | undefined,
): ToolDefinition<SpawnArgs> {
  return {
    name: toolName,
    description: forced ? `Like spawn_background_agent, on the configured remote runner. ${SPAWN_DESCRIPTION}` : SPAWN_DESCRIPTION,
    // The `executor` argument is there only with a remote executor (spawnArgsFor); the run reads it as optional.
    parameters: parameters as unknown as z.ZodType<SpawnArgs>,
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
          ...executorOf(forced ?? args.executor),
          ...spawnSpecFromArgs(args),
          ...(callId ? { parentToolId: callId } : {}),
          ...(args.speculative ? { speculative: true } : {}),
        });
      } catch (error) {
        throw asToolError(error, toolName);
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
}

function executorOf(executor: 'local' | 'remote' | undefined): { executor?: 'local' | 'remote' } {
  return executor === undefined ? {} : { executor };
}

/** A refusal from the manager, as the tool error the model reads (its code kept). */
export function asToolError(error: unknown, tool: string): ToolError {
  if (error instanceof ToolError) return error;
  const code = error instanceof ForkpoolError ? error.code : 'TOOL_FAILED';
  return new ToolError(code, tool, errorMessage(error));
}
