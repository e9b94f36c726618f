import { z } from 'zod';
import { pendingApprovalSchema, responseSchemas } from './responses.js';
import { APPROVAL_REASON_MAX_CHARS } from '../shared/approvals.js';

/**
 * The approvals part of the HTTP API (routes/approvals.ts): its request shapes, which the route
 * parses with, and the list it answers with, named components of `/openapi.json` like the bodies
 * of responses.ts (which has PendingApproval and ApprovalRecord, part of a job's body too). A job that calls a gated tool it was not granted, under `approvals: "ask"`,
 * waits for an answer (docs/tools.md "Answering approvals").
 */

/** `POST /v1/jobs/{id}/approvals/{callId}`: the job (its ref: `id`, name, or `session/id`) and the call it waits to make. */
export const approvalParams = z.strictObject({
  id: z.string().min(1).max(100),
  callId: z.string().min(1).max(200).describe("The pending call's id (GET /v1/approvals, or the approval-requested event)."),
});

/** The answer; `by` is always `http`. */
export const approvalBody = z.strictObject({
  decision: z.enum(['allow', 'deny']).describe('"allow" runs exactly the call it waits on, once; "deny" gives its model a tool error with the reason.'),
  remember: z.boolean().optional().describe('With allow: the job may use this tool from now on without asking. Default false.'),
  reason: z.string().trim().min(1).max(APPROVAL_REASON_MAX_CHARS).optional().describe("Why: the job's model reads it with a deny; kept in the job's record."),
});

/** A pending approval in the server's list: with the session its job belongs to (null: the server's own). */
export const listedApprovalSchema = pendingApprovalSchema.extend({
  session: z.string().nullable().describe("The job's session, null for the server's own job (its ref is then `session/id`)."),
});
responseSchemas.add(listedApprovalSchema, { id: 'ListedApproval' });

export const approvalListBody = z.object({ approvals: z.array(listedApprovalSchema).describe('Oldest first.') });
responseSchemas.add(approvalListBody, { id: 'ApprovalList' });
