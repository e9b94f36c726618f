/**
 * forkpool's library API: a parent agent session with background jobs in worker threads, the
 * manager on its own, configuration, errors and the types they exchange. Executors live on
 * `forkpool/executors`, the simulated model on `forkpool/sim`.
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import './shared/require-node.js';
export { AgentSession, type AgentSessionOptions, type SessionEvents } from './main/session/agent-session.js';
export {
  BackgroundManager,
  type BackgroundManagerOptions,
  type SpawnRequest,
  type SpawnOptions,
  type JobHandle,
  type CloseReport,
  type ManagerEvents,
  type JobScheduler,
  type TimerTag,
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
export { jobError } from './main/jobs/job-endings.js';
export type { ResumeRequest } from './main/jobs/resumes.js';
export type { JobRecord, JobState, JobStatus, EndedBy, JobEnding, SentMessage } from './main/ledger/ledger.js';
export { openSqliteLedger, SqliteLedgerStore, type SqliteStoreOptions } from './main/ledger/sqlite-store.js';
export type { LedgerStore, JobStore, SessionSnapshot, SessionSummary, StoredJob, StoredSpec, StoredAlert, StoredMessage } from './main/ledger/ledger-store.js';
export type { RecoveryReport } from './main/jobs/recovery.js';
export { Deliveries } from './main/delivery/deliveries.js';
export type { DurableSessionOptions } from './main/session/durable-session.js';
export type { ParentAgent, ParentEvent, TurnResult, AgentRole } from './main/session/parent-agent.js';
export { followUpNotice, type FollowUpCause, type FollowUpReason } from './main/views/follow-up.js';
export { AUTOMATED_RESULTS_MARKER, FOLLOW_UP_PROMPTS } from './shared/prompts.js';
export { PermissionStore, type PermissionAsker } from './main/limits/permissions.js';
export { APPROVAL_ANSWERERS, type ApprovalDecision, type ApprovalRecord, type PendingApproval } from './shared/approvals.js';
export type { ListenerFailure } from './shared/typed-emitter.js';
export { loadConfig, CONFIG_FILE_NAME, type ConfigOverrides, type LoadConfigOptions } from './main/setup/config-load.js';
export { createLogger, type LoggerOptions, type LogLevel } from './main/setup/logger.js';
export {
  configSchema,
  parseConfig,
  assertModelConfigured,
  EXECUTOR_KINDS,
  type ForkpoolConfig,
  type ForkpoolConfigInput,
  type BackgroundConfig,
  type ToolLimits,
} from './shared/config.js';
export { DEFAULTS, BUILTIN_TOOL_NAMES, type BuiltinToolName } from './shared/defaults.js';
export * from './shared/errors.js';
export { tool, TOOL_NAME_PATTERN, type ToolDefinition, type ToolCallContext, type JsonValue } from './shared/tool-contract.js';
export type { ToolModuleContext } from './shared/tool-modules.js';
export type { ToolCatalog, CatalogEntry, ToolSource, ToolSourceName } from './main/tools/catalog.js';
export type { FunctionHooks, HookFunction } from './main/hooks/hook-runner.js';
export { HOOK_EVENTS, type HookEvent, type HookInput, type HookAnswer, type CommandHook, type HooksConfig } from './shared/hooks.js';
export type { LoopEvent, StopReason } from './shared/loop-events.js';
export type { StoredTranscript, TranscriptCall, TranscriptPage, TranscriptStep } from './main/jobs/transcripts.js';
export type { ResultTag } from './shared/result-tag.js';
export type { JobSpec, JobOutcome, JobRole, JobTask, WorkerMessage, MainMessage } from './shared/protocol.js';
export type { Usage, UsageByModel } from './shared/usage.js';
