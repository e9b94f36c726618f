import { z } from 'zod';
import { STEERING_MAX_CHARS } from '../../shared/protocol.js';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { SteerOptions, SteerReceipt } from '../jobs/manager.js';
import { asToolError } from './background-tools.js';

/** What the steer tool needs: the manager's `send`. */
export interface SteerToolHost {
  send(idOrName: string, text: string, options: SteerOptions): SteerReceipt;
}

const steerArgs = z.strictObject({
  job_id: z.string().trim().min(1).max(100).describe('The job id spawn_background_agent returned (e.g. "bg-3"), or the name you gave it.'),
  message: z.string().trim().min(1).max(STEERING_MAX_CHARS).describe('What the job should know or do differently: a correction, a narrower focus, a new fact.'),
  interrupt: z
    .boolean()
    .optional()
    .describe(
      'Default false: it reads the message before its next model call. True: its model call in flight is cancelled and it continues at once with the message.',
    ),
});

/**
 * `send_to_background_agent` (Claude Code's SendMessage, Codex's send_input): a message to a job
 * that is still live. A refusal (an ended job, names its state) is a tool error, nothing changes.
 */
export function steerTool(host: SteerToolHost): ToolDefinition<z.output<typeof steerArgs>> {
  return {
    name: 'send_to_background_agent',
    description:
      'Send a message to a background agent you started that has not ended: it reads it before its next model call (interrupt: true cancels the ' +
      'call it is waiting on, so it reads it now). A queued agent gets it as it starts; one waiting for its own children when it resumes.',
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
