import { z } from 'zod';
import { ToolError } from '../shared/errors.js';
import type { ToolDefinition } from '../shared/tools/types.js';
import type { JobHandle } from './manager.js';

/** What the parent's background tools need from the session that owns them. */
export interface BackgroundToolHost {
  spawnFromAgent(request: { task: string; label: string; fullContext: boolean }): JobHandle;
  cancelJob(id: string): JobHandle;
}

const spawnArgs = z.strictObject({
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
});

const cancelArgs = z.strictObject({
  job_id: z.string().trim().min(1).max(100).describe('The id spawn_background_agent returned, e.g. "bg-3".'),
});

/** The seed's `spawn_background_agent` and `cancel_background_agent`, for the parent only. */
export function backgroundTools(host: BackgroundToolHost): ToolDefinition[] {
  const spawn: ToolDefinition<z.output<typeof spawnArgs>> = {
    name: 'spawn_background_agent',
    description:
      'Fork an independent copy of yourself to research a narrow, self-contained question in the background — reading files, grepping, ' +
      'running commands — without using up your own context. You are notified with a summary when it completes; you do not block on it ' +
      'and must not fabricate a result before that notification arrives.',
    parameters: spawnArgs,
    gated: false,
    async run(args) {
      const handle = host.spawnFromAgent({ task: args.task, label: args.label, fullContext: args.full_context ?? false });
      return (
        `Started background agent ${handle.id} ("${handle.label}"), now ${handle.state}. ` +
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
        throw new ToolError('JOB_UNKNOWN', 'cancel_background_agent', error instanceof Error ? error.message : String(error));
      }
    },
  };
  return [spawn, cancel];
}
