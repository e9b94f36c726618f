import type { ForkpoolConfig } from '../../shared/config.js';
import { spawnableModels } from '../../shared/spawn-spec.js';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { Deliveries } from '../delivery/deliveries.js';
import { resultPageTool, reusedResultText } from '../delivery/result-pages.js';
import type { BackgroundManager, JobHandle, SpawnRequest } from '../jobs/manager.js';
import { agentTools } from './agent-tools.js';
import { approveTool } from './approve-tool.js';
import { backgroundTools, type SpawnToolRequest } from './background-tools.js';
import { inspectTools } from './inspect-tools.js';
import { resumeTool } from './resume-tool.js';
import { steerTool } from './steer-tool.js';
import { waitTool } from './wait-tool.js';
import { worktreeTool } from './worktree-tools.js';
import type { JobActivity } from './job-activity.js';

/** What the parent's job tools need of the session around them. */
export interface ParentToolsHost {
  config: ForkpoolConfig;
  manager: BackgroundManager;
  deliveries: Deliveries;
  activity: JobActivity;
  /** The parent's turn now: the wave its spawns join, the turn a result is delivered in. */
  currentTurn: () => number;
  /** spawn_background_agent: the session books it (role, wave, dedup's reused result). */
  spawnFromAgent: (request: SpawnToolRequest) => JobHandle | Promise<JobHandle>;
  /** agent_<name>: a spawn in the parent's role and this turn's wave. */
  spawnForAgentTool: (request: SpawnRequest) => JobHandle | Promise<JobHandle>;
  /** agent_<name>: its call was stopped before the job returned, and the job cancelled with it. */
  cancelledWithCall?: (jobId: string) => void;
}

/**
 * The tools a parent agent uses on its background jobs: spawn and cancel (its `agent` among the
 * allow-listed `agentTools`), resume, send, wait, one `agent_<name>` per allow-listed agent, list
 * and check, read_background_result for a result delivered in part, and (parentModelApprovals only)
 * approve_background_tool_call. Send, wait, resume and the worktree go through `manager.parentControls`.
 */
export function parentJobTools(host: ParentToolsHost): ToolDefinition[] {
  const { config, manager, deliveries, currentTurn } = host;
  const resultMaxChars = config.background.resultMaxChars;
  const allowedAgents = config.agentTools.map((name) => ({
    name,
    description: config.agents[name]?.description ?? name,
    background: config.agents[name]?.background ?? true,
  }));
  return [
    ...backgroundTools({
      spawnFromAgent: (request) => host.spawnFromAgent(request),
      cancelJob: (id) => manager.cancel(id),
      // The model may start only the agents it was given (milk's allow-list); a person, the library and HTTP may start any.
      agents: allowedAgents,
      remote: manager.remoteExecutor !== undefined,
      spec: {
        tools: config.tools,
        models: spawnableModels(config),
        mayReplacePrompt: config.background.allowSystemPromptReplace,
        mayTypeOutput: config.background.allowOutputSchema,
      },
      reusedResult: (id) => reusedResultText(manager, deliveries, id, currentTurn(), resultMaxChars),
    }),
    resumeTool({ controls: manager.parentControls, currentTurn }),
    steerTool(manager.parentControls),
    waitTool({ manager, controls: manager.parentControls, deliveries, config, currentTurn }),
    ...agentTools(
      {
        manager,
        deliveries,
        spawn: (request) => host.spawnForAgentTool(request),
        currentTurn,
        resultMaxChars,
        ...(host.cancelledWithCall ? { cancelledWithCall: host.cancelledWithCall } : {}),
      },
      allowedAgents,
    ),
    ...inspectTools({ manager, deliveries, activity: host.activity, currentTurn, cooldownMs: config.background.checkCooldownMs, resultMaxChars }),
    resultPageTool({
      manager,
      deliveries,
      currentTurn,
      // A page must pass the tool loop's output cap whole (it would be cut, not paged).
      pageMaxChars: Math.min(config.delivery.pageMaxChars, config.toolLimits.outputMaxChars - 300),
    }),
    worktreeTool(manager.parentControls),
    // Only where the config says so: by default no model answers what a person is asked.
    ...(config.parentModelApprovals ? [approveTool(manager)] : []),
  ];
}
