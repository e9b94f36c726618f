import { z } from 'zod';
import { ToolError } from '../shared/errors.js';
import { ALERT_MAX_CHARS, ALERT_SEVERITIES, type AlertSeverity } from '../shared/protocol.js';
import type { ToolDefinition } from '../shared/tools/types.js';
import type { JobSpec, WorkerMessage } from '../shared/protocol.js';
import { scheduleNextTurnTool, type ScheduledTurn } from '../shared/scheduler.js';
import { maxDepthFor } from '../shared/agents.js';
import { spawnableModels } from '../shared/spawn-spec.js';
import { spawnChildTool, type ChildLink, type ChildSpawnOffer } from './children.js';

const alertArgs = z.strictObject({
  message: z.string().trim().min(1).max(ALERT_MAX_CHARS),
  severity: z.enum(ALERT_SEVERITIES).default('info'),
});

/**
 * core-agent's alerts: a job tells its parent something before it ends. The message crosses
 * the port at once; the parent sees it at its next turn boundary. At most `max` per job (the
 * main thread enforces the same bound: a worker is not trusted to count).
 */
export function reportAlertTool(send: (alert: { message: string; severity: AlertSeverity }) => void, max: number): ToolDefinition<z.output<typeof alertArgs>> {
  let sent = 0;
  return {
    name: 'report_alert',
    description: `Tell your parent something urgent now (at most ${max} times), not your final answer.`,
    parameters: alertArgs,
    gated: false,
    async run(args) {
      if (sent >= max)
        throw new ToolError('ALERT_LIMIT', 'report_alert', `you already sent ${max} alerts, the most a job may send; put the rest in your final answer`);
      sent++;
      send({ message: args.message, severity: args.severity });
      return `Alert ${sent} of at most ${max} sent to your parent (${args.severity}). Continue your task.`;
    },
  };
}

/** The tools a job has beyond the built-ins: they talk to the main thread over the port. */
export function jobToolsFor(
  spec: JobSpec,
  post: (message: WorkerMessage) => void,
  children: ChildLink | undefined,
  signal: AbortSignal,
  onSchedule: (turn: ScheduledTurn) => void,
): ToolDefinition[] {
  const tools: ToolDefinition[] = [];
  // sleep: the run ends after the call and the main thread wakes the job; exit_on_defer: the job ends deferred.
  if (spec.scheduler) tools.push(scheduleNextTurnTool({ scheduler: spec.scheduler, onSchedule }));
  const maxAlerts = spec.config.background.maxAlertsPerJob;
  if (maxAlerts > 0) tools.push(reportAlertTool((alert) => post({ type: 'alert', jobId: spec.id, ...alert }), maxAlerts));
  if (children) tools.push(spawnChildTool(children, childSpawnOffer(spec), signal));
  return tools;
}

/**
 * What the job's own spawn tool offers, as the parent's does: the allow-list is the config's
 * `agentTools` (an agent has none of its own), a fork's tools are those a fork gets (the
 * config's), the models are the spawnable ones. The main thread checks them all again.
 */
function childSpawnOffer(spec: JobSpec): ChildSpawnOffer {
  const config = spec.config;
  const agents = config.agentTools.map((name) => ({ name, description: config.agents[name]?.description ?? name }));
  return {
    agents,
    tools: config.tools,
    models: spawnableModels(config),
    mayReplacePrompt: config.background.allowSystemPromptReplace,
    mayTypeOutput: config.background.allowOutputSchema,
  };
}

/** Below its depth limit (its agent's, else the session's), a job gets the spawn tool. */
export function canSpawn(spec: JobSpec): boolean {
  return (spec.depth ?? 1) < maxDepthFor(spec.config, spec.agent);
}
