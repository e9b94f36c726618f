/**
 * `forkpool/protocol`: the contracts under the library, for those who build beside it rather than
 * embed it: an executor or a runner of their own, a ledger store, a tool module, tooling over
 * the configuration. The messages between the main thread and a job's thread, the ledger
 * store's shapes, `DEFAULTS` and the config schema, the prompts forkpool writes into a parent's
 * conversation, the wire form of errors, and the job timers' interface. An embedder needs none
 * of it: that is `forkpool`.
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import './shared/require-node.js';
// Between the main thread and a job's thread.
export type { JobSpec, JobOutcome, JobTask, WorkerMessage, MainMessage } from './shared/protocol.js';
export type { ResultTag } from './shared/result-tag.js';
export { TIMEOUT_CODES, isErrorCode, serializeError, deserializeError } from './shared/errors.js';
// The ledger store (forkpool/durable's SQLite store implements it).
export type { LedgerStore, JobStore, SessionSnapshot, SessionSummary, StoredJob, StoredSpec, StoredAlert, StoredMessage } from './main/ledger/ledger-store.js';
export type { StoredTranscript } from './main/jobs/transcripts.js';
// Configuration: its schema, defaults and the names it accepts.
export { configSchema, parseConfig, EXECUTOR_KINDS, type BackgroundConfig, type ToolLimits } from './shared/config.js';
export { CONFIG_FILE_NAME } from './main/setup/config-load.js';
export { DEFAULTS } from './shared/defaults.js';
export { BUILTIN_TOOL_NAMES, type BuiltinToolName } from './shared/fixed-limits.js';
export { TOOL_NAME_PATTERN } from './shared/tool-contract.js';
export { HOOK_EVENTS, type CommandHook, type HooksConfig } from './shared/hooks.js';
export { APPROVAL_ANSWERERS } from './shared/approvals.js';
export type { ToolModuleContext } from './shared/tool-modules.js';
export type { CatalogEntry, ToolSourceName } from './main/tools/catalog.js';
// What forkpool writes into the parent's conversation.
export { AUTOMATED_RESULTS_MARKER, FOLLOW_UP_PROMPTS } from './shared/prompts.js';
export { followUpNotice, type FollowUpCause } from './main/views/follow-up.js';
// Job timers (BackgroundManagerOptions.scheduler: tests drive time with a manual one).
export type { JobScheduler, TimerTag } from './main/jobs/manager.js';
