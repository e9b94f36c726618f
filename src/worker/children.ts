import { z } from 'zod';
import { AbortError, ToolError, isErrorCode } from '../shared/errors.js';
import { jobNameSchema, type ChildSpawnRequest, type WorkerMessage } from '../shared/protocol.js';
import type { ToolDefinition } from '../shared/tools/types.js';
import { outputSchemaArg, spawnSpecArgs, spawnSpecFromArgs, type SpawnSpecOffer } from '../shared/spawn-spec-args.js';

/**
 * A job's side of nesting: its spawns go over the port to the main thread (which enforces the
 * depth, the cap and the queue), and its children's results come back over the port to be put
 * before its next model call.
 */
/** A child the main thread booked (or an identical one it joined: see docs/delivery.md "De-duplication"). */
export interface SpawnedChild {
  childId: string;
  label: string;
  joined?: 'attached' | 'reused';
}

export class ChildLink {
  readonly #post: (message: WorkerMessage) => void;
  readonly #jobId: string;
  #nextRequest = 1;
  readonly #replies = new Map<number, { resolve: (child: SpawnedChild) => void; reject: (error: unknown) => void }>();
  readonly #children = new Set<string>();
  /** Children whose results arrived (seen by the model or buffered). */
  readonly #received = new Set<string>();
  readonly #seen: string[] = [];
  #buffered: Array<{ ids: string[]; text: string }> = [];

  constructor(jobId: string, post: (message: WorkerMessage) => void) {
    this.#jobId = jobId;
    this.#post = post;
  }

  spawn(request: ChildSpawnRequest, signal: AbortSignal): Promise<SpawnedChild> {
    const requestId = this.#nextRequest++;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.#replies.delete(requestId);
        reject(new AbortError(signal.reason));
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#replies.set(requestId, {
        resolve: (child) => {
          signal.removeEventListener('abort', onAbort);
          this.#children.add(child.childId);
          resolve(child);
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      });
      this.#post({ type: 'spawn', jobId: this.#jobId, requestId, request });
    });
  }

  onSpawnResult(message: {
    requestId: number;
    ok: boolean;
    childId?: string | undefined;
    label?: string | undefined;
    joined?: 'attached' | 'reused' | undefined;
    code?: string | undefined;
    message?: string | undefined;
  }): void {
    const waiting = this.#replies.get(message.requestId);
    if (!waiting) return;
    this.#replies.delete(message.requestId);
    if (message.ok && message.childId)
      waiting.resolve({ childId: message.childId, label: message.label ?? message.childId, ...(message.joined ? { joined: message.joined } : {}) });
    else
      waiting.reject(
        new ToolError(isErrorCode(message.code) ? message.code : 'TOOL_FAILED', 'spawn_background_agent', message.message ?? 'the spawn was refused'),
      );
  }

  onChildResults(ids: string[], text: string): void {
    for (const id of ids) this.#received.add(id);
    this.#buffered.push({ ids, text });
  }

  /** Results that arrived since the last call, for the next model call; marks them seen. */
  take(): string | undefined {
    if (this.#buffered.length === 0) return undefined;
    const taken = this.#buffered;
    this.#buffered = [];
    for (const part of taken) this.#seen.push(...part.ids);
    return `${taken.map((part) => part.text).join('\n\n')}\n\nThese are the results of background agents you started. Use them to finish your task.`;
  }

  /** Children whose results have not arrived. */
  get outstanding(): string[] {
    return [...this.#children].filter((id) => !this.#received.has(id));
  }

  get seen(): string[] {
    return [...this.#seen];
  }
}

/**
 * The first turn's results of a run from its task after a restart or a re-queue
 * (`JobSpec.heldResults`): its children were an earlier run's, and this run never saw them start.
 */
export function earlierRunResults(held: string): string {
  return `${held}\n\nThese are the results of background agents an earlier run of this task started, before it was restarted. Use them to finish your task; do not start the same work again.`;
}

const spawnArgs = z.strictObject({
  task: z.string().trim().min(1).max(100_000).describe('The self-contained task for the child agent; it does not see your conversation.'),
  label: z.string().trim().min(1).max(200).describe('Short label for status display.'),
  name: jobNameSchema.describe('Optional short name, unique among running jobs.'),
});

/** What a job's spawn tool offers: the agents it may start (the config's `agentTools`) and the spec's choices. */
export interface ChildSpawnOffer extends SpawnSpecOffer {
  /** The allow-list: the same `agentTools` the parent's spawn tool offers (an agent has no allow-list of its own), with their descriptions. */
  agents: ReadonlyArray<{ name: string; description: string }>;
}

/**
 * The tool's arguments: the task, the spec's (as the parent's tool has them), `output_schema`
 * only with `background.allowOutputSchema` (no prompt bytes otherwise) and, with an allow-list, `agent`.
 */
function childSpawnArgs(offer: ChildSpawnOffer) {
  const withSpec = spawnArgs.extend(spawnSpecArgs(offer)).extend(offer.mayTypeOutput ? { output_schema: outputSchemaArg } : {});
  if (offer.agents.length === 0) return withSpec;
  return withSpec.extend({
    agent: z
      .enum(offer.agents.map((agent) => agent.name) as [string, ...string[]])
      .optional()
      .describe(`Optional configured agent to run instead of a copy of yourself. ${offer.agents.map((a) => `"${a.name}": ${a.description}`).join('; ')}.`),
  });
}

/**
 * The spawn tool of a job below the depth limit. The main thread decides (the allow-list, the
 * spec, depth, cap and queue, as for any spawn); a refusal is a tool error.
 */
export function spawnChildTool(link: ChildLink, offer: ChildSpawnOffer, signal: AbortSignal): ToolDefinition {
  return {
    name: 'spawn_background_agent',
    description:
      'Start a child background agent for a narrow, self-contained part of your task. Its result is given to you before a later step once it ends. ' +
      'If you give your final answer while children still run, you wait for them and continue with their results.',
    parameters: childSpawnArgs(offer),
    gated: false,
    background: true,
    async run(input: z.output<ReturnType<typeof childSpawnArgs>> & { agent?: string | undefined; output_schema?: Record<string, unknown> | undefined }) {
      const child = await link.spawn({ task: input.task, label: input.label, agent: input.agent, name: input.name, ...spawnSpecFromArgs(input) }, signal);
      if (child.joined === 'attached')
        return `Joined background agent ${child.childId} ("${child.label}"): an identical task was already running, so no new agent started. Its result will be given to you when it ends. Do not guess it.`;
      if (child.joined === 'reused')
        return `Background agent ${child.childId} ("${child.label}") answered this identical task moments ago, so it was not run again; its result is given to you before your next step.`;
      return `Started background agent ${child.childId} ("${child.label}"). Its result will be given to you when it ends. Do not guess it.`;
    },
  };
}
