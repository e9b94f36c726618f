import { z } from 'zod';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { ParentControls } from '../jobs/manager.js';
import { RESUME_MESSAGE_MAX_CHARS } from '../jobs/resumes.js';
import { asToolError } from './background-tools.js';

const resumeArgs = z.strictObject({
  job_id: z.string().trim().min(1).max(100),
  message: z.string().trim().min(1).max(RESUME_MESSAGE_MAX_CHARS),
});

/**
 * `resume_background_agent` (Codex's `resume_agent`): an ended agent goes on from its own
 * conversation with a new instruction, as a new job (see src/main/jobs/resumes.ts). A job that
 * has not ended, one whose conversation was not kept, or an unknown one is a tool error; nothing starts.
 */
export function resumeTool(host: { controls: Pick<ParentControls, 'resume'>; currentTurn: () => number }): ToolDefinition<z.output<typeof resumeArgs>> {
  return {
    name: 'resume_background_agent',
    description: 'Continue an ended background job with a new instruction, in its own conversation, as a new job.',
    parameters: resumeArgs,
    gated: false,
    async run(args) {
      try {
        const handle = host.controls.resume(args.job_id, args.message, { wave: host.currentTurn() });
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
