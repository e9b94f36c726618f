/**
 * What every peer executor (another SDK's way of running sub-agents) shares with forkpool's own
 * jobs, so a bench row compares the runtime and nothing else: the same config, system prompt,
 * built-in tools (src/shared/tools), argument validation, tool timeout, output cap and
 * `Error: …` results as forkpool's tool loop gives the model. Only the loop around them is the
 * peer's own.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { withTimeout } from '#dist/shared/abort.js';
import { parseConfig, type ForkpoolConfig } from '#dist/shared/config.js';
import { TimeoutError, ToolError, errorMessage } from '#dist/shared/errors.js';
import { backgroundSystemPrompt } from '#dist/shared/prompts.js';
import { capHeadTail } from '#dist/shared/text-budget.js';
import { builtinTools, toOpenAITool } from '#dist/shared/tools/index.js';
import { toolPolicyFrom } from '#dist/shared/tools/policy.js';
import { resolveWorkspaceRoot } from '#dist/shared/tools/sandbox.js';
import { scrubEnv } from '#dist/shared/tools/secrets.js';
import type { ToolContext, ToolDefinition } from '#dist/shared/tools/types.js';
import type { CellSpec } from '../types.js';

/**
 * How long a peer gets to end a job stuck in synchronous code before it counts as not stopped.
 * FORKPOOL_BENCH_HARD_STOP_LIMIT_MS shortens it for the suite's smoke run (each peer cell waits
 * it out once); the bench's figures use the default.
 */
export const HARD_STOP_LIMIT_MS = Number(process.env.FORKPOOL_BENCH_HARD_STOP_LIMIT_MS) || 10_000;
/** The stuck job's spin: just past the limit, so the figure is "not stopped" and the spin is bounded. */
const STUBBORN_SPIN_MS = HARD_STOP_LIMIT_MS + 250;

/** Per-job callbacks of a fan-out; `index` is the job's place in the task list. */
export interface PeerFanoutHooks {
  /** The job was handed to the SDK (its "spawn"). */
  started: (index: number) => void;
  /** The job got one of the cap's slots and runs now. */
  running: (index: number) => void;
  /** The job gives its slot back (called inside the limiter, before the next job can take it). */
  released: (index: number) => void;
  /** The job ended; `ok`: with a final answer. */
  ended: (index: number, ok: boolean, detail?: string) => void;
  toolResult: (name: string, ok: boolean, ms: number) => void;
}

export interface PeerRunOneOptions {
  signal: AbortSignal;
  /** The job itself started (for a sub-agent tool: its invocation, not the orchestrator's call). */
  onStart: () => void;
  /** Every model request of the job. */
  onModelRequest: () => void;
  /** The job's first tool call spins in synchronous code; `onSpin` fires just before it starts to. */
  stubborn?: { onSpin: () => void };
}

/** A peer SDK's way of running research jobs, in this process. */
export interface PeerExecutor {
  /** Runs `tasks` as one fan-out the way the SDK's users do, at most `cap` at once; resolves when every job ended. */
  fanOut(tasks: readonly string[], hooks: PeerFanoutHooks): Promise<void>;
  /** Runs one job alone (the probes); resolves when it ended, however it ended. */
  runOne(task: string, options: PeerRunOneOptions): Promise<{ ok: boolean }>;
  /** Model requests the jobs made so far (an orchestrator's own are not counted). */
  modelRequests(): number;
}

/** The config a forkpool cell would use for the same spec (model, limits, tools). */
export function peerConfig(spec: CellSpec): ForkpoolConfig {
  return parseConfig({ baseUrl: spec.simUrl, workspaceRoot: spec.workspace, maxRetries: 2, background: { maxConcurrent: spec.concurrency } });
}

/** One tool as a peer sees it: forkpool's JSON schema (what the model is shown) and a runner. */
export interface PeerTool {
  name: string;
  description: string;
  /** The chat-completions `parameters` JSON schema forkpool sends for this tool. */
  parameters: Record<string, unknown>;
  /** Validates and runs the call as forkpool's loop does; never throws: failures are `Error: …`. */
  run(args: unknown, signal: AbortSignal | undefined): Promise<string>;
}

export interface PeerToolkit {
  config: ForkpoolConfig;
  systemPrompt: string;
  tools: PeerTool[];
  /** The same tools, the job's first tool call spinning in synchronous code first (the hard-stop probe). */
  stubbornTools(onSpin: () => void): PeerTool[];
}

export async function peerToolkit(spec: CellSpec, onToolResult?: (name: string, ok: boolean, ms: number) => void): Promise<PeerToolkit> {
  const config = peerConfig(spec);
  const workspaceRoot = await resolveWorkspaceRoot(config.workspaceRoot, { allowBroad: config.allowBroadWorkspace });
  const granted = new Set<string>(config.grantedTools);
  const context: Omit<ToolContext, 'signal'> = {
    workspaceRoot,
    limits: config.toolLimits,
    // A background job never asks a person: granted tools run, the rest are denied.
    permissions: { check: async (request) => granted.has(request.tool) },
    env: scrubEnv(process.env),
    policy: toolPolicyFrom(config),
  };
  const wrap = (def: ToolDefinition, before?: () => void): PeerTool => ({
    name: def.name,
    description: def.description,
    parameters: toOpenAITool(def).function.parameters,
    async run(args, signal) {
      const started = performance.now();
      let ok = false;
      let output: string;
      try {
        before?.();
        output = await runDefinition(def, args, context, config, signal ?? new AbortController().signal);
        ok = true;
      } catch (error) {
        output = `Error: ${errorMessage(error)}`;
      }
      onToolResult?.(def.name, ok, performance.now() - started);
      return capHeadTail(output, config.toolLimits.outputMaxChars);
    },
  });
  const definitions = builtinTools(config.tools);
  return {
    config,
    systemPrompt: backgroundSystemPrompt({ workspaceRoot }),
    tools: definitions.map((def) => wrap(def)),
    stubbornTools: (onSpin) => {
      // The job's first tool call, whichever tool the workload's model asks for first, spins.
      let spun = false;
      const spin = () => {
        if (spun) return;
        spun = true;
        onSpin();
        const until = performance.now() + STUBBORN_SPIN_MS;
        while (performance.now() < until) {
          /* spin: nothing in this thread runs until it ends */
        }
      };
      return definitions.map((def) => wrap(def, spin));
    },
  };
}

/** Argument validation, the permission gate and the tool timeout, as in forkpool's tool loop. */
async function runDefinition(
  def: ToolDefinition,
  raw: unknown,
  context: Omit<ToolContext, 'signal'>,
  config: ForkpoolConfig,
  signal: AbortSignal,
): Promise<string> {
  const parsed = def.parameters.safeParse(typeof raw === 'string' ? JSON.parse(raw || '{}') : (raw ?? {}));
  if (!parsed.success) throw new ToolError('TOOL_ARGUMENTS_INVALID', def.name, `invalid arguments for ${def.name}: ${z.prettifyError(parsed.error)}`);
  const args: unknown = parsed.data;
  if (def.gated) {
    const summary = def.describeCall?.(args) ?? def.name;
    if (!(await context.permissions.check({ tool: def.name, summary }))) {
      throw new ToolError('PERMISSION_DENIED', def.name, `permission denied: "${def.name}" is not granted in this session (${summary}).`);
    }
  }
  const timeoutMs = config.toolLimits.toolTimeoutMs;
  return withTimeout(
    (toolSignal, untimedWait) => def.run(args, { ...context, signal: toolSignal, untimedWait }),
    timeoutMs,
    signal,
    () => new TimeoutError('TOOL_TIMEOUT', `tool ${def.name} timed out after ${timeoutMs} ms`, timeoutMs),
  );
}

/**
 * At most `limit` calls of `run` at once, the rest wait in order: what a user of these SDKs adds
 * (p-limit and the like) to keep a fan-out under the same cap as forkpool's `maxConcurrent`.
 */
export function limiter(limit: number): <T>(run: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (run) => {
    // A waiter is handed the slot of the run that ends, so none can be taken in between.
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await run();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

/** A `fetch` that reports each request before sending it (the "model request" of a job). */
export function observedFetch(onRequest: () => void): typeof fetch {
  return (input, init) => {
    onRequest();
    return fetch(input, init);
  };
}
