import { threadId } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { AbortError, ToolError, errorMessage, isErrorCode } from '../shared/errors.js';
import { HOOK_CALL_PREFIX, type HookVerdict, type JobHookEvent, type ToolHooks } from '../shared/hooks.js';
import type { HostToolAnswer, HostToolStub, WorkerMessage } from '../shared/protocol.js';
import type { ToolDefinition as ContractTool } from '../shared/tool-contract.js';
import { toolsOfModule } from '../shared/tool-modules.js';
import { BUILTIN_TOOLS, isBuiltinTool } from '../shared/tools/index.js';
import { loopToolOf, type ToolCaller } from '../shared/tools/contract-tool.js';
import type { ToolContext, ToolDefinition } from '../shared/tools/types.js';

/**
 * The tools a job's thread offers beyond the port tools: built-ins, tool modules' tools (run
 * here) and stubs of the main thread's tools (host, MCP), whose calls cross the job's port.
 *
 * Why the job's port, as `requestId` messages: the one RPC style across the thread link (see
 * this folder's README).
 */

/** Accepts anything: a host tool's arguments are validated on the main thread, against its real schema. */
const checkedOnHost = z.any();

/** A job's host tool calls waiting for their answers, by request id. */
export class HostToolLink {
  readonly #jobId: string;
  readonly #post: (message: WorkerMessage) => void;
  readonly #pending = new Map<number, (answer: HostToolAnswer) => void>();
  #last = 0;

  constructor(jobId: string, post: (message: WorkerMessage) => void) {
    this.#jobId = jobId;
    this.#post = post;
  }

  /** The loop's tool for a stub: its call goes to the main thread; an abort tells the main thread at once. */
  stubTool(stub: HostToolStub): ToolDefinition {
    return {
      name: stub.name,
      description: stub.description,
      parameters: checkedOnHost,
      jsonSchema: stub.parameters,
      gated: stub.gated,
      ...(stub.timeoutMs !== undefined ? { timeoutMs: stub.timeoutMs } : {}),
      run: (args, ctx: ToolContext & { callId?: string }) => this.#call(stub.name, ctx.callId ?? '', args, ctx.signal),
    };
  }

  /**
   * Asks the main thread to run this job's hooks for `event` (a host call named `hook:<event>`,
   * see src/main/hooks). Never rejects but on abort: a failed call is a problem reported.
   */
  async hook(event: JobHookEvent, fields: Record<string, unknown>, signal: AbortSignal): Promise<HookVerdict> {
    try {
      return JSON.parse(await this.#call(`${HOOK_CALL_PREFIX}${event}`, '', fields, signal)) as HookVerdict;
    } catch (error) {
      if (signal.aborted) throw error;
      return { problems: [`${event} hooks could not run: ${errorMessage(error)}`] };
    }
  }

  answer(message: { requestId: number; ok: boolean; output?: string | undefined; code?: string | undefined; message?: string | undefined }): void {
    const settle = this.#pending.get(message.requestId);
    if (!settle) return;
    this.#pending.delete(message.requestId);
    settle(message.ok ? { ok: true, output: message.output ?? '' } : { ok: false, code: message.code ?? 'TOOL_FAILED', message: message.message ?? 'failed' });
  }

  async #call(name: string, callId: string, args: unknown, signal: AbortSignal): Promise<string> {
    if (signal.aborted) throw new AbortError(signal.reason);
    const requestId = ++this.#last;
    let onAbort: () => void = () => {};
    const answer = await new Promise<HostToolAnswer | undefined>((resolve) => {
      this.#pending.set(requestId, resolve);
      onAbort = () => {
        this.#pending.delete(requestId);
        this.#post({ type: 'tool-abort', jobId: this.#jobId, requestId });
        resolve(undefined);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#post({ type: 'tool-call', jobId: this.#jobId, requestId, name, callId, args });
    }).finally(() => signal.removeEventListener('abort', onAbort));
    if (!answer) throw new AbortError(signal.reason);
    if (answer.ok) return answer.output;
    throw new ToolError(isErrorCode(answer.code) ? answer.code : 'TOOL_FAILED', name, answer.message);
  }
}

/** Each module's tools, imported once per thread (its module-level state is the thread's, never a job's). */
const moduleTools = new Map<string, Promise<ContractTool[]>>();

function toolsOfFile(file: string): Promise<ContractTool[]> {
  let tools = moduleTools.get(file);
  if (!tools) {
    tools = import(pathToFileURL(file).href).then((namespace: unknown) => toolsOfModule(namespace, file, { thread: 'worker', threadId }));
    moduleTools.set(file, tools);
  }
  return tools;
}

/**
 * The loop's tools for `names`, in order: a built-in, a host stub, or a module's tool. A name
 * none of them has is left out: a BullMQ worker runs only the tools its own config declares.
 */
export async function offeredTools(
  names: readonly string[],
  modules: readonly string[],
  stubs: readonly HostToolStub[],
  link: HostToolLink,
  caller: ToolCaller,
): Promise<ToolDefinition[]> {
  const fromModules = new Map<string, ContractTool>();
  const wanted = names.filter((name) => !isBuiltinTool(name) && !stubs.some((stub) => stub.name === name));
  if (wanted.length > 0) for (const list of await Promise.all(modules.map(toolsOfFile))) for (const def of list) fromModules.set(def.name, def);
  return [...new Set(names)].flatMap((name): ToolDefinition[] => {
    if (isBuiltinTool(name)) return [BUILTIN_TOOLS[name]];
    const stub = stubs.find((s) => s.name === name);
    if (stub) return [link.stubTool(stub)];
    const def = fromModules.get(name);
    return def ? [loopToolOf(def, caller)] : [];
  });
}

/** A job's tool hooks: asked of the main thread, only for the events its spec says have hooks. */
export function jobToolHooks(link: HostToolLink, events: readonly JobHookEvent[] | undefined): ToolHooks | undefined {
  const pre = events?.includes('PreToolUse') === true;
  const post = events?.includes('PostToolUse') === true;
  if (!pre && !post) return undefined;
  return {
    ...(pre
      ? { preToolUse: (call, signal) => link.hook('PreToolUse', { tool_name: call.name, tool_input: call.input, tool_use_id: call.callId }, signal) }
      : {}),
    ...(post
      ? {
          postToolUse: (call, signal) =>
            link.hook('PostToolUse', { tool_name: call.name, tool_input: call.input, tool_use_id: call.callId, tool_response: call.response }, signal),
        }
      : {}),
  };
}
