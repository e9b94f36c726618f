/**
 * Approvals in background jobs (docs/tools.md "Approvals"): with `approvals: "ask"`, a job's
 * call of an ungranted gated tool waits for a yes or a no instead of failing at once. These are
 * the shapes every surface shares: the manager's `approvals()` / `approve()`, its events, the
 * job's record, the HTTP API and the chat.
 */
import { z } from 'zod';
import { ToolError } from './errors.js';
import type { ForkpoolConfig } from './config.js';

/** A gated tool call of a job that waits for an answer. */
export interface PendingApproval {
  jobId: string;
  /** The model's tool call id. */
  callId: string;
  tool: string;
  /** One line a person can judge (the tool's `describeCall`, as a permission request has it). */
  summary: string;
  /** The call's arguments as JSON text, secrets redacted, capped. */
  args: string;
  /** The job's label. */
  label: string;
  /** Epoch ms. */
  requestedAt: number;
  /** Epoch ms: then `approvalTimeoutAction` applies. */
  expiresAt: number;
}

/** Who answered an approval. */
export const APPROVAL_ANSWERERS = ['library', 'chat', 'http', 'parent-model', 'approve-with', 'timeout'] as const;

/** An answer to a pending call. */
export interface ApprovalDecision {
  decision: 'allow' | 'deny';
  /** `true` or `'job'`: grant this tool to the job from now on; `'session'`: to the session's PermissionStore. */
  remember?: boolean | 'job' | 'session';
  /** A deny's reason, read by the model. */
  reason?: string;
  /** Who answered: 'library' (default), 'chat', 'http', 'parent-model', 'approve-with', 'timeout', or any short name. */
  by?: string;
}

/** An answered approval, kept in the job's record (`approvals`) and transcript. */
export interface ApprovalRecord extends PendingApproval {
  decision: 'allow' | 'deny';
  by: string;
  /** Epoch ms. */
  at: number;
  reason?: string;
  remember?: 'job' | 'session';
}

/** The longest deny reason kept and shown to the model. */
export const APPROVAL_REASON_MAX_CHARS = 2_000;

/** Checks an {@link ApprovalDecision} given from outside (library, HTTP, chat). */
export const approvalDecisionSchema = z.strictObject({
  decision: z.enum(['allow', 'deny']),
  remember: z.union([z.boolean(), z.enum(['job', 'session'])]).optional(),
  reason: z.string().max(APPROVAL_REASON_MAX_CHARS).optional(),
  by: z.string().min(1).max(64).optional(),
});

/** A job's approval mode: its agent's `approvals`, else the config's. */
export function approvalModeFor(config: Pick<ForkpoolConfig, 'approvals' | 'agents'>, agent: string | undefined): 'deny' | 'ask' {
  return (agent === undefined ? undefined : config.agents[agent]?.approvals) ?? config.approvals;
}

/** Why `ask` does not apply to a job on a forkpool worker (the bullmq executor): the model reads it. */
export const REMOTE_APPROVALS_REASON =
  'approvals: "ask" does not reach jobs run by the bullmq executor (no one can answer on a forkpool worker); the tool needs to be granted in grantedTools for such jobs';

/** `remember` as the record keeps it: `true` is `'job'`, `false` nothing. */
export function rememberScope(remember: ApprovalDecision['remember']): 'job' | 'session' | undefined {
  if (remember === true) return 'job';
  return remember === false ? undefined : remember;
}

/**
 * Thrown by a job's permission gate when its call waits for an answer: the tool loop finishes
 * the batch's other calls, then pauses the run with this call unanswered (tool-loop.ts), and
 * the job hands its conversation to the main thread (worker/job.ts).
 */
export class ApprovalPending extends ToolError {
  readonly callId: string;
  constructor(toolName: string, callId: string) {
    super('PERMISSION_DENIED', toolName, `"${toolName}" waits for an approval`);
    this.name = 'ApprovalPending';
    this.callId = callId;
  }
}
