import { z } from 'zod';
import { APPROVAL_REASON_MAX_CHARS } from '../shared/approvals.js';

/**
 * The approvals part of the HTTP API (routes/approvals.ts): its request shapes, which the route
 * parses with, and its response shapes, which responses.ts names as components of
 * `/openapi.json`. A job that calls a gated tool it was not granted, under `approvals: "ask"`,
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

/** One call a job waits to make (BackgroundManager.approvals). */
export const pendingApprovalSchema = z.object({
  jobId: z.string(),
  callId: z.string(),
  tool: z.string(),
  summary: z.string().describe('What the call does, in one line.'),
  args: z.string().describe('Its arguments as JSON, secrets redacted.'),
  label: z.string().describe("The job's label."),
  requestedAt: z.number().describe('Epoch milliseconds.'),
  expiresAt: z.number().describe('When approvalTimeoutMs runs out: then the call is denied (or the job cancelled, by config).'),
});

/** A pending approval in the server's list: with the session its job belongs to (null: the server's own). */
export const listedApprovalSchema = pendingApprovalSchema.extend({
  session: z.string().nullable().describe("The job's session, null for the server's own job (its ref is then `session/id`)."),
});

export const approvalListBody = z.object({ approvals: z.array(listedApprovalSchema).describe('Oldest first.') });

/** An answered approval: who answered, when, and what. */
export const approvalRecordSchema = pendingApprovalSchema.extend({
  decision: z.enum(['allow', 'deny']),
  by: z.string().describe('http, chat, parent-model, approve-with, library, timeout, ...'),
  at: z.number().describe('Epoch milliseconds.'),
  reason: z.string().optional(),
  remember: z.enum(['job', 'session']).optional().describe('The tool is granted to the job (or the session) from now on.'),
});
