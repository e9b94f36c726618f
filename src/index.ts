/**
 * forkpool's library API, what an embedder needs: a parent agent session with background jobs in
 * worker threads (`AgentSession`), the manager on its own (`BackgroundManager`) and its
 * `Deliveries`, configuration (`loadConfig`), your own tools (`tool`), the errors and their
 * codes, and the records and events they exchange. At most 20 runtime values
 * (test/package/entry-points.test.ts counts them).
 *
 * Elsewhere: executors on `forkpool/executors`, the SQLite ledger on `forkpool/durable`, the
 * simulated model on `forkpool/sim`; the wire, storage and prompt contracts (messages between
 * threads, the ledger store's shapes, `DEFAULTS`, the follow-up prompts, the config schema) on
 * `forkpool/protocol`.
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import './shared/require-node.js';
// The session and the manager.
export { AgentSession, type AgentSessionOptions, type SessionEvents } from './main/session/agent-session.js';
export type { DurableSessionOptions } from './main/session/durable-session.js';
export type { ParentAgent, ParentEvent, TurnResult, AgentRole } from './main/session/parent-agent.js';
export type { ModelClient, EndpointClient } from './shared/model-client.js';
export {
  BackgroundManager,
  type BackgroundManagerOptions,
  type SpawnRequest,
  type SpawnOptions,
  type JobHandle,
  type CloseReport,
  type ManagerEvents,
  type SteerOptions,
  type SteerReceipt,
  type WaitMode,
  type WaitOptions,
  type WaitOutcome,
  type JobWorktree,
  type WorktreeAction,
  type WorkspaceMode,
  type ParentControls,
} from './main/jobs/manager.js';
export type { ResumeRequest } from './main/jobs/resumes.js';
export type { RecoveryReport } from './main/jobs/recovery.js';
export { Deliveries } from './main/delivery/deliveries.js';
// Records and events.
export type { JobRecord, JobState, JobStatus, EndedBy, JobEnding, SentMessage } from './main/ledger/ledger.js';
export type { JobRole } from './shared/protocol.js';
export type { Usage, UsageByModel } from './shared/usage.js';
export type { TranscriptPage, TranscriptStep, TranscriptCall } from './main/jobs/transcripts.js';
export type { LoopEvent, StopReason } from './shared/loop-events.js';
export type { FollowUpReason } from './main/views/follow-up.js';
export type { ListenerFailure } from './shared/typed-emitter.js';
// Approvals and permissions.
export { PermissionStore, type PermissionAsker } from './main/limits/permissions.js';
export type { ApprovalDecision, ApprovalRecord, PendingApproval } from './shared/approvals.js';
// Configuration and logging.
export { loadConfig, type ConfigOverrides, type LoadConfigOptions } from './main/setup/config-load.js';
export type { ForkpoolConfig, ForkpoolConfigInput } from './shared/config.js';
export { createLogger, type LoggerOptions, type LogLevel } from './main/setup/logger.js';
// Errors.
export {
  ForkpoolError,
  ConfigError,
  ToolError,
  TimeoutError,
  AbortError,
  JobError,
  LedgerWriteError,
  LedgerBusyError,
  ERROR_CODES,
  type ErrorCode,
  type TimeoutCode,
  type ConfigIssue,
  type LeaseHolder,
  type SerializedError,
} from './shared/errors.js';
export { jobError } from './main/jobs/job-endings.js';
// Tools and hooks.
export { tool, type ToolDefinition, type ToolCallContext, type JsonValue } from './shared/tool-contract.js';
export type { ToolCatalog, ToolSource } from './main/tools/catalog.js';
export type { FunctionHooks, HookFunction } from './main/hooks/hook-runner.js';
export type { HookEvent, HookInput, HookAnswer } from './shared/hooks.js';
