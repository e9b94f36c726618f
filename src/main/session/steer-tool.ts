import { z } from 'zod';
import { STEERING_MAX_CHARS } from '../../shared/protocol.js';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { SteerOptions, SteerReceipt } from '../jobs/manager.js';
import { asToolError } from './background-tools.js';

/** What the steer tool needs: `send` (ParentControls). */
export interface SteerToolHost {
  send(idOrName: string, text: string, options: SteerOptions): SteerReceipt;
}

const steerArgs = z.strictObject({
  job_id: z.string().trim().min(1).max(100),
  message: z.string().trim().min(1).max(STEERING_MAX_CHARS),
  interrupt: z.boolean().optional().describe('Cancel its model call in flight to read it now.'),
});

/**
 * `send_to_background_agent` (Claude Code's SendMessage, Codex's send_input): a message to a job
 * that is still live. A refusal (an ended job, names its state) is a tool error, nothing changes.
 */
export function steerTool(host: SteerToolHost): ToolDefinition<z.output<typeof steerArgs>> {
  return {
    name: 'send_to_background_agent',
    description: 'Send a correction or new fact to a running background job; it reads it before its next model call.',
    parameters: steerArgs,
    gated: false,
    async run(args) {
      let receipt: SteerReceipt;
      try {
        receipt = host.send(args.job_id, args.message, { interrupt: args.interrupt ?? false });
      } catch (error) {
        throw asToolError(error, 'send_to_background_agent');
      }
      const when =
        receipt.delivery === 'kept'
          ? receipt.state === 'suspended'
            ? 'it waits for its children and gets it when it resumes'
            : 'it is queued and gets it as it starts'
          : receipt.interrupt
            ? 'its model call in flight is cancelled and it continues with it'
            : 'it reads it before its next model call';
      return `Message ${receipt.message} sent to job ${receipt.jobId} ("${receipt.label}"): ${when}. Its result still comes in a <background_results> block.`;
    },
  };
}
