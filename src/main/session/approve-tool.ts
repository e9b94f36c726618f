import { z } from 'zod';
import { APPROVAL_REASON_MAX_CHARS } from '../../shared/approvals.js';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { BackgroundManager } from '../jobs/manager.js';
import { asToolError } from './background-tools.js';

const approveArgs = z.strictObject({
  job: z.string().trim().min(1).max(100).describe('The job id (e.g. "bg-3") or name of a background agent that waits for an approval.'),
  call_id: z.string().trim().min(1).max(200).optional().describe('The tool call it waits to make, when it waits on several; default the oldest.'),
  decision: z.enum(['allow', 'deny']).describe('"allow" runs exactly that call, once; "deny" refuses it and the job goes on without it.'),
  remember: z.boolean().optional().describe('With allow: the job may use this tool from now on without asking. Default false.'),
  reason: z.string().trim().min(1).max(APPROVAL_REASON_MAX_CHARS).optional().describe('Why: the job reads it with a deny, and its record keeps it.'),
});

/**
 * `approve_background_tool_call`: the parent's model answers a job's approval (by
 * `parent-model`). Offered only when the config's `parentModelApprovals` is true: by default a
 * model never approves what a person would be asked about. A job that waits for nothing, an
 * unknown call or one answered already is a tool error naming it.
 */
export function approveTool(manager: Pick<BackgroundManager, 'approve' | 'approvals' | 'find'>): ToolDefinition<z.output<typeof approveArgs>> {
  return {
    name: 'approve_background_tool_call',
    description:
      'Allow or deny a tool call a background agent waits to make (a gated tool such as bash or write_file that it was not granted). ' +
      'Read what it wants first (check_background_agent or its alert); allow only what its task needs.',
    parameters: approveArgs,
    gated: false,
    async run(args) {
      try {
        const job = manager.find(args.job);
        const pending = job && manager.approvals().find((p) => p.jobId === job.id && (args.call_id === undefined || p.callId === args.call_id));
        // The manager names what is unknown; without a pending call here it is asked as given.
        const record = manager.approve(job?.id ?? args.job, pending?.callId ?? args.call_id, {
          decision: args.decision,
          by: 'parent-model',
          ...(args.remember !== undefined ? { remember: args.remember } : {}),
          ...(args.reason !== undefined ? { reason: args.reason } : {}),
        });
        const remembered = record.remember ? ` (${record.tool} is granted to the ${record.remember} from now on)` : '';
        return record.decision === 'allow'
          ? `Allowed: job ${record.jobId} runs its ${record.tool} call ${record.callId} now${remembered}. Its result still comes in a <background_results> block.`
          : `Denied: job ${record.jobId}'s ${record.tool} call ${record.callId} does not run; its model reads ${record.reason ? `the reason "${record.reason}"` : 'that it was denied'}.`;
      } catch (error) {
        throw asToolError(error, 'approve_background_tool_call');
      }
    },
  };
}
