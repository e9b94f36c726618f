import type { z } from 'zod';
import type { UntimedWait } from '../abort.js';
import type { ToolLimits } from '../config.js';
import type { FileReadLog } from './file-reads.js';

/** A question to the permission store: may this tool run now? */
export interface PermissionRequest {
  tool: string;
  /** One line a person could judge, e.g. the command or the path. Never holds secrets. */
  summary: string;
  /** The model's tool call id, when a tool loop asks (a job's approvals are per call). */
  callId?: string;
  /** The call's arguments as the model wrote them (JSON text), when a tool loop asks. */
  args?: string;
}

/**
 * Decides whether a gated tool may run. Resolves, never rejects. A background job's gate never
 * asks a person: a tool already granted works, anything else is denied at once.
 */
export interface PermissionGate {
  check(request: PermissionRequest): Promise<boolean>;
}

export interface ToolContext {
  /** Absolute, symlink-resolved workspace root; every path a tool touches stays inside it. */
  workspaceRoot: string;
  limits: ToolLimits;
  /** Aborts the tool at once (job cancel, timeout, parent abort). */
  signal: AbortSignal;
  /**
   * Runs a wait that does not count against the tool's timeout: a search's turn in its thread's
   * queue (see `withSearchSlot`), which moves as other calls end, each under its own timeout.
   * Absent (a tool run outside a tool loop): the wait simply runs.
   */
  untimedWait?: UntimedWait;
  permissions: PermissionGate;
  /** Environment for child processes, already scrubbed of secrets. */
  env: Readonly<Record<string, string>>;
  /**
   * Where a tool registers each child process group it starts, so the main thread can kill it
   * when the job's thread dies, is hard-stopped or the manager closes (a thread's own cleanup
   * never runs then). Absent on the main thread's own tools.
   */
  processes?: ProcessRegistry;
  /** Sandbox and protected paths; absent: {@link DEFAULT_TOOL_POLICY} (sandbox on where it works). */
  policy?: ToolPolicy;
  /** Where read_file and grep record the files they read (a background job's stale check). */
  reads?: FileReadLog;
}

/** What confines the tools beyond the workspace check. Build it with `toolPolicyFrom(config)`. */
export interface ToolPolicy {
  /** `auto`: bash in bubblewrap when it works here, else a process group; `bwrap`: bubblewrap or fail; `none`: a process group. */
  sandbox: 'auto' | 'bwrap' | 'none';
  bwrapPath: string;
  /** bash inside the sandbox may use the network. */
  network: boolean;
  /** Extra absolute folders bash may read (read-only) in the sandbox. */
  readPaths: readonly string[];
  /** Refused by the write tools (a name: that segment anywhere; with "/": a workspace-relative prefix). */
  protectedPaths: readonly string[];
  allowProtectedWrites: boolean;
  /**
   * Absolute paths no tool opens, and bash sees masked (see hidden.ts): the loaded config
   * file(s), `hiddenPaths` from the config, the durable ledger's files. Files hidden by name
   * (`.env`, ...) are hidden whether listed or not.
   */
  hiddenPaths: readonly string[];
}

/** Child process groups of one job, reported to the main thread as they start and end. */
export interface ProcessRegistry {
  /** `pgid`: the group leader's pid (spawned with `detached: true`). */
  started(pgid: number): void;
  ended(pgid: number): void;
}

/**
 * One tool the model may call. Arguments are validated with `parameters` before `run`; a
 * failure in validation or in `run` (throw a `ToolError`) goes back to the model as that
 * call's result, and the loop continues.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a plain `ToolDefinition` (a tool list, the registry) holds tools of any argument type
export interface ToolDefinition<Args = any> {
  name: string;
  description: string;
  parameters: z.ZodType<Args>;
  /** The JSON Schema the model is shown, when the tool came with one (a host, module or MCP tool); else `parameters` converted. */
  jsonSchema?: Record<string, unknown>;
  /** Its own timeout; default `toolLimits.toolTimeoutMs`. */
  timeoutMs?: number;
  /** Needs a grant in the permission store before it runs. */
  gated: boolean;
  /**
   * The call starts a background job and returns at once (spawn_background_agent): its `tool_call`
   * event says `background: true`. A function decides per call from its parsed arguments
   * (`agent_<name>({background: true})`, issue 38 C7).
   */
  background?: boolean | ((args: unknown) => boolean);
  /** Summary shown in a permission request (no secrets). */
  describeCall?(args: Args): string;
  run(args: Args, ctx: ToolContext): Promise<string>;
}
