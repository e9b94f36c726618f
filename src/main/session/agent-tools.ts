import { z } from 'zod';
import { AbortError, ToolError } from '../../shared/errors.js';
import type { LoopToolContext } from '../../shared/tool-loop.js';
import type { ToolContext, ToolDefinition } from '../../shared/tools/types.js';
import { asToolError } from './background-tools.js';
import { formatBackgroundResults } from '../views/delivery-format.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { BackgroundManager, JobHandle, SpawnRequest } from '../jobs/manager.js';
import type { Deliveries } from '../delivery/deliveries.js';

/** What `agent_<name>` tools need from the session. */
export interface AgentToolHost {
  manager: Pick<BackgroundManager, 'on' | 'get' | 'result' | 'cancel'>;
  deliveries: Pick<Deliveries, 'markDelivered' | 'markBackgrounded'>;
  /** Starts the job as the parent's own (its role, this turn's wave). */
  spawn(request: Pick<SpawnRequest, 'task' | 'label' | 'agent' | 'parentToolId'>): JobHandle | Promise<JobHandle>;
  currentTurn(): number;
  resultMaxChars: number;
  /** A call stopped before its job returned (the parent's turn was cancelled): the job it cancels (called just before the cancel). */
  cancelledWithCall?: (jobId: string) => void;
}

const taskArg = z
  .string()
  .trim()
  .min(1)
  .max(100_000)
  .describe('The self-contained task. The agent does not see your conversation: include everything it needs.');
const agentArgs = z.strictObject({
  task: taskArg,
  background: z
    .boolean()
    .optional()
    .describe(
      'Default false: wait for the answer. True: return as soon as the agent first reports progress; it keeps working and its final result is delivered to you later like any background result.',
    ),
});
/** An agent with `background: false`: no such parameter, and a call that passes it anyway fails validation (a tool error). */
const foregroundOnlyArgs = z.strictObject({ task: taskArg });

/**
 * Remy's agent tools: one `agent_<name>(task, background?)` per allow-listed peer. The job runs
 * in a worker thread like any other (same manager, ledger, cancel, timeout, accounting).
 * `background: false` waits for the answer, which is delivered here and never again;
 * `background: true` resolves at the job's first text turn, marks it `backgrounded`, and its
 * final result arrives as a background result. Aborting the parent's call cancels the job.
 * An agent configured with `background: false` gets no `background` parameter.
 */
export function agentTools(host: AgentToolHost, agents: ReadonlyArray<{ name: string; description: string; background?: boolean }>): ToolDefinition[] {
  return agents.map(({ name, description, background: mayBackground = true }) => {
    const tool: ToolDefinition<z.output<typeof agentArgs>> = {
      name: `agent_${name}`,
      description: `Delegate a task to the "${name}" agent (${description}). It runs in its own thread with its own model and tools.${mayBackground ? '' : ' It cannot run in the background: the call waits for its answer.'}`,
      parameters: mayBackground ? agentArgs : foregroundOnlyArgs,
      gated: false,
      // Its tool_call event says `background: true` when the call asks for it (the chat shows ⇢ background).
      ...(mayBackground ? { background: (raw: unknown) => agentArgs.safeParse(raw).data?.background === true } : {}),
      async run(args, ctx) {
        const callId = (ctx as ToolContext & Partial<LoopToolContext>).callId;
        let handle: JobHandle;
        try {
          handle = await host.spawn({ task: args.task, label: `${name}: ${args.task.slice(0, 60)}`, agent: name, ...(callId ? { parentToolId: callId } : {}) });
        } catch (error) {
          throw asToolError(error, tool.name);
        }
        return runAgentCall(host, handle.id, args.background ?? false, ctx.signal, tool.name);
      },
    };
    return tool;
  });
}

async function runAgentCall(host: AgentToolHost, id: string, background: boolean, signal: AbortSignal, toolName: string): Promise<string> {
  let offProgress = () => {};
  let onAbort = () => {};
  try {
    const early = new Promise<{ kind: 'text'; text: string }>((resolve) => {
      if (!background) return;
      offProgress = host.manager.on('progress', ({ jobId, event }) => {
        // Its first text turn that is not its last: the job is under way and goes on.
        if (jobId === id && event.type === 'assistant_text' && !event.final) resolve({ kind: 'text', text: event.text });
      });
    });
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => {
        if (host.manager.get(id)?.state !== 'ended') {
          // Told first: a queued job ends inside cancel(), and its end must already count as the call's.
          host.cancelledWithCall?.(id);
          host.manager.cancel(id);
        }
        reject(new AbortError(signal.reason));
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    const ended = host.manager.result(id).then((record) => ({ kind: 'ended' as const, record }));
    const first = await Promise.race([early, ended, aborted]);
    if (first.kind === 'text') {
      host.deliveries.markBackgrounded(id);
      return (
        `Agent job ${id} is working in the background (backgrounded). So far it said:\n` +
        first.text
          .split('\n')
          .map((line) => `| ${line.replace(/</g, '&lt;').replace(/>/g, '&gt;')}`)
          .join('\n') +
        `\nIts final result will be delivered to you in a <background_results> block at a later turn. Do not guess it.`
      );
    }
    return answerOf(host, first.record, toolName);
  } finally {
    offProgress();
    signal.removeEventListener('abort', onAbort);
  }
}

/** The job's answer as this call's result; it counts as the delivery (never injected again). */
function answerOf(host: AgentToolHost, record: Readonly<JobRecord>, toolName: string): string {
  const delivered = host.deliveries.markDelivered(record.id, host.currentTurn()) ?? record;
  if (delivered.status === 'failed' || delivered.status === 'cancelled' || delivered.status === 'timed_out') {
    throw new ToolError(
      delivered.error?.code ?? 'TOOL_FAILED',
      toolName,
      `agent job ${record.id} ${delivered.status}: ${delivered.error?.message ?? 'no reason given'}`,
    );
  }
  return formatBackgroundResults([delivered], host.resultMaxChars);
}
