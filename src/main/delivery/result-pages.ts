import { z } from 'zod';
import { ToolError } from '../../shared/errors.js';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { BackgroundManager } from '../jobs/manager.js';
import type { Deliveries } from './deliveries.js';

/** What read_background_result needs: the ledger (through the manager and its deliveries) and the turn running now. */
export interface ResultPageHost {
  manager: Pick<BackgroundManager, 'find'>;
  deliveries: Pick<Deliveries, 'markDelivered' | 'noteResultRead'>;
  /** A result read before its delivery counts as delivered in this turn. */
  currentTurn(): number;
  /** The longest page, in characters (`delivery.pageMaxChars`). */
  pageMaxChars: number;
}

const TOOL = 'read_background_result';

/**
 * `read_background_result(job_id, offset, limit)`: any part of a background job's full result,
 * by character offsets, straight from the ledger. A delivered block that left characters out
 * says which offset to read from; nothing a job answered is lost to the injection budget.
 */
export function resultPageTool(host: ResultPageHost): ToolDefinition {
  const parameters = z.strictObject({
    job_id: z.string().trim().min(1).max(100),
    offset: z.number().int().min(0).optional(),
    limit: z.number().int().min(1).optional(),
  });
  return {
    name: TOOL,
    description: "Read a background job's full result by character offset (a cut result names where to go on).",
    parameters,
    gated: false,
    async run(args: z.output<typeof parameters>) {
      const job = host.manager.find(args.job_id);
      if (!job) throw new ToolError('JOB_UNKNOWN', TOOL, `no background job with id or name "${args.job_id}"; list_background_agents shows them all`);
      if (job.state !== 'ended')
        throw new ToolError('RESULT_UNAVAILABLE', TOOL, `job ${job.id} has not ended (it is ${job.state}); you will be told when it does`);
      if (job.resultDropped)
        throw new ToolError(
          'RESULT_UNAVAILABLE',
          TOOL,
          `job ${job.id}'s result text was dropped from memory long after its delivery (background.retention); only what was delivered then remains`,
        );
      const text = job.resultText ?? '';
      const offset = args.offset ?? 0;
      if (offset > text.length) {
        throw new ToolError(
          'TOOL_ARGUMENTS_INVALID',
          TOOL,
          `offset ${offset} is past the end of job ${job.id}'s result, which has ${text.length} characters; use an offset from 0 to ${text.length}`,
        );
      }
      const limit = Math.min(args.limit ?? host.pageMaxChars, host.pageMaxChars);
      let end = Math.min(text.length, offset + limit);
      // A page never ends between the two halves of a surrogate pair (an emoji, say).
      if (end < text.length && end > offset && isHighSurrogate(text.charCodeAt(end - 1))) end += end - 1 > offset ? -1 : 1;
      if (job.deliveredInTurn === undefined) {
        // Read before its delivery: it counts as delivered now (never injected again), with what is still unread.
        const unread: [number, number] = offset === 0 ? [end, text.length] : [0, text.length];
        host.deliveries.markDelivered(job.id, host.currentTurn(), unread[0] < unread[1] ? unread : undefined);
      } else {
        host.deliveries.noteResultRead(job.id, offset, end);
      }
      const where = end < text.length ? `next page: offset ${end}` : 'end of the result';
      const capped = args.limit !== undefined && args.limit > host.pageMaxChars ? ` (limit capped at ${host.pageMaxChars})` : '';
      return `[job ${job.id} result: characters ${offset} to ${end} of ${text.length}; ${where}${capped}]\n${text.slice(offset, end)}`;
    },
  };
}

/**
 * A reused job's result for the spawn tool's answer (see docs/delivery.md "De-duplication"): its first
 * `maxChars` characters and how to read the rest. Counts as its delivery when it had none yet.
 */
export function reusedResultText(
  manager: Pick<BackgroundManager, 'get'>,
  deliveries: Pick<Deliveries, 'markDelivered'>,
  id: string,
  turn: number,
  maxChars: number,
): string {
  const record = manager.get(id);
  const text = record?.resultText ?? '';
  let end = Math.min(text.length, maxChars);
  if (end < text.length && end > 0 && isHighSurrogate(text.charCodeAt(end - 1))) end--;
  if (record && record.deliveredInTurn === undefined) deliveries.markDelivered(id, turn, end < text.length ? [end, text.length] : undefined);
  const rest = end < text.length ? `\n[… ${text.length - end} more characters: read_background_result(job_id: "${id}", offset: ${end})]` : '';
  return `${text.slice(0, end) || '(no text)'}${rest}`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
