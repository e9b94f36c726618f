import { z } from 'zod';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { BackgroundManager } from '../jobs/manager.js';
import { RESUME_MESSAGE_MAX_CHARS } from '../jobs/resumes.js';
import { asToolError } from './background-tools.js';

const resumeArgs = z.strictObject({
  job_id: z.string().trim().min(1).max(100).describe('The id (e.g. "bg-3") or name of a background agent that has ended.'),
  message: z
    .string()
    .trim()
    .min(1)
    .max(RESUME_MESSAGE_MAX_CHARS)
    .describe("The new instruction: it continues the ended agent's own conversation, which it still has (what it read, what it answered)."),
});

/**
 * `resume_background_agent` (Codex's `resume_agent`): an ended agent goes on from its own
 * conversation with a new instruction, as a new job (see src/main/jobs/resumes.ts). A job that
 * has not ended, one whose conversation was not kept, or an unknown one is a tool error; nothing starts.
 */
export function resumeTool(host: { manager: BackgroundManager; currentTurn: () => number }): ToolDefinition<z.output<typeof resumeArgs>> {
  return {
    name: 'resume_background_agent',
    description:
      'Continue a background agent that has ended, with a new instruction: it picks up its own conversation (what it read and answered) ' +
      "instead of starting from nothing. Runs as a new job with its own id and budget; its result is delivered to you once, like any job's.",
    parameters: resumeArgs,
    gated: false,
    async run(args) {
      try {
        const handle = host.manager.resume(args.job_id, args.message, { wave: host.currentTurn() });
        return (
          `Resumed background agent ${args.job_id} as job ${handle.id} ("${handle.label}"), now ${handle.state}. ` +
          'You will be told when it ends, in a <background_results> block at the start of a later turn. Do not guess its result.'
        );
      } catch (error) {
        throw asToolError(error, 'resume_background_agent');
      }
    },
  };
}
