/**
 * forkpool's library API: a parent agent session with background jobs in worker threads,
 * the manager on its own, executors, and the typed pieces they exchange.
 */
export { AgentSession, type AgentSessionOptions, type SessionEvents } from './main/agent-session.js';
export { BackgroundManager, type BackgroundManagerOptions, type SpawnRequest, type JobHandle, type CloseReport, type ManagerEvents } from './main/manager.js';
export { DeliveryLedger, type JobRecord, type JobState, type JobStatus, type EndedBy } from './main/ledger.js';
export { ParentAgent, type ParentAgentOptions, type ParentEvent, type TurnResult, type AgentRole } from './main/parent-agent.js';
export { Session } from './main/session.js';
export { PermissionStore, type PermissionAsker } from './main/permissions.js';
export { createExecutor, threadsFor } from './main/executor-factory.js';
export type { Executor, ExecutorKind, Isolation, ExecuteOptions } from './main/executor.js';
export { PiscinaExecutor, type PiscinaExecutorOptions } from './main/piscina-executor.js';
export { InlineExecutor, TinypoolExecutor, WorkerPerJobExecutor } from './main/other-executors.js';
export { loadConfig, CONFIG_FILE_NAME, type ConfigOverrides } from './main/config-load.js';
export { createLogger, type LoggerOptions, type LogLevel } from './main/logger.js';
export { formatBackgroundResults } from './main/delivery-format.js';
export { configSchema, parseConfig, type ForkpoolConfig, type ForkpoolConfigInput, type BackgroundConfig, type ToolLimits } from './shared/config.js';
export { DEFAULTS, BUILTIN_TOOL_NAMES, type BuiltinToolName } from './shared/defaults.js';
export * from './shared/errors.js';
export { runToolLoop, type ToolLoopOptions, type ToolLoopResult, type LoopEvent, type StopReason } from './shared/tool-loop.js';
export { createModelClient, callModel, type RateGate, type ModelReply } from './shared/model-call.js';
export { SharedRateGate } from './shared/rate-gate.js';
export { parseResultTag, type ResultTag, type ParsedResult } from './shared/result-tag.js';
export { capHeadTail } from './shared/text-budget.js';
export { BUILTIN_TOOLS, builtinTools, toOpenAITool } from './shared/tools/index.js';
export type { ToolDefinition, ToolContext, PermissionGate, PermissionRequest } from './shared/tools/types.js';
export type { JobSpec, JobOutcome, JobRole, WorkerMessage, MainMessage } from './shared/protocol.js';
export { BACKGROUND_FOLLOWUP_PROMPT } from './shared/prompts.js';
export type { Usage, UsageByModel } from './shared/usage.js';
