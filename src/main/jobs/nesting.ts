import { configForAgent, maxDepthFor } from '../../shared/agents.js';
import { BUILTIN_TOOL_NAMES } from '../../shared/fixed-limits.js';
import type { ForkpoolConfig } from '../../shared/config.js';
import { JobError, errorMessage } from '../../shared/errors.js';
import type { ChildSpawnRequest, JobSpec, ResumeState } from '../../shared/protocol.js';
import { mergeUsageByModel } from '../../shared/usage.js';
import { applySpawnSpec, spawnSpecOf } from '../../shared/spawn-spec.js';
import { formatBackgroundResults } from '../views/delivery-format.js';
import type { StopRequest } from './job-endings.js';
import type { DeliveryLedger, JobEnding, JobRecord } from '../ledger/ledger.js';
import type { Job } from './job.js';
import type { JobTable, Nested } from './job-table.js';
import type { Dispatcher } from './dispatcher.js';
import type { JobHandle, SpawnRequest } from './manager-api.js';

/** What nesting needs of the manager: its books, and the two moves only the manager makes. */
export interface NestingHost {
  readonly config: ForkpoolConfig;
  readonly ledger: DeliveryLedger;
  readonly table: JobTable;
  readonly dispatcher: Dispatcher;
  /** Books (and queues) a child, as any spawn is. */
  book(request: SpawnRequest, nested: Nested): JobHandle;
  stop(job: Job, reason: StopRequest): void;
}

/**
 * Depth above 1 through the main thread: a job's spawn (over its port) is booked by the one
 * manager under its depth, cap and queue; a child's result goes to the job that spawned it; a
 * job that answers with children running is suspended (its slot and thread given back, so
 * parents waiting on children can never hold every slot) and resumed once they have all ended.
 * The tree itself is the jobs' links (Job.links: parent, children, watchers, watching; job-links.ts).
 */
export class Nesting {
  readonly #host: NestingHost;

  constructor(host: NestingHost) {
    this.#host = host;
  }

  /**
   * A job asks for a child: the allow-list, the depth, then (in book, through checkSpawn and admitSpawn) the
   * spec, the cap and the queue, as for any spawn. A refusal goes back as the tool's error.
   */
  spawnChild(parent: Job, requestId: number, request: ChildSpawnRequest): void {
    const attempt = parent.attempt;
    const spec = parent.spec;
    const depth = (spec?.depth ?? 1) + 1;
    const limit = spec ? maxDepthFor(this.#host.config, spec.agent) : 1;
    try {
      if (!spec || parent.isOver) throw new JobError('JOB_UNKNOWN', parent.id, `job ${parent.id} is not running`);
      if (depth > limit)
        throw new JobError('DEPTH_EXCEEDED', parent.id, `job ${parent.id} is at depth ${depth - 1}, the most allowed is ${limit}: it cannot spawn`);
      checkTreeBounds(this.#host.config.background, parent, this.#host.dispatcher.waitingForSlot);
      checkAllowedAgent(this.#host.config, request.agent);
      // Its spawn tool offers output_schema only with the setting: a worker that sends one anyway is refused.
      if (request.outputSchema !== undefined && !this.#host.config.background.allowOutputSchema)
        throw new JobError('TOOL_ARGUMENTS_INVALID', parent.id, 'output_schema: not offered here (background.allowOutputSchema is false)');
      const tools = childTools(this.#host.config, spec, request);
      const handle = this.#host.book(
        {
          task: request.task,
          label: request.label,
          role: parent.record.role,
          wave: null,
          ...(request.agent ? { agent: request.agent } : {}),
          ...(request.name ? { name: request.name } : {}),
          ...spawnSpecOf(request),
          tools,
        },
        { parent, depth },
      );
      attempt?.post({
        type: 'spawn-result',
        requestId,
        ok: true,
        childId: handle.id,
        label: handle.label,
        ...(handle.joined ? { joined: handle.joined } : {}),
      });
      const child = this.#host.table.get(handle.id);
      if (handle.joined === 'attached' && child) this.#watch(parent, child);
      else if (handle.joined === 'reused') this.#deliverTo(parent, this.#host.ledger.get(handle.id) as JobRecord);
    } catch (error) {
      const code = error instanceof JobError ? error.code : 'INTERNAL';
      attempt?.post({ type: 'spawn-result', requestId, ok: false, code, message: errorMessage(error) });
    }
  }

  /** It answered with children running: its slot and thread go back until they end. */
  suspend(job: Job, state: Omit<ResumeState, 'childResults'>, seenChildren: string[]): void {
    job.suspend(state, seenChildren);
    this.maybeResume(job);
    this.#host.dispatcher.pump();
  }

  /** A waiting job whose children have all ended runs again, first in the queue, with their results. */
  maybeResume(job: Job): void {
    // A job paused for approvals runs again when they are answered (approvals.ts), a sleeping one at its time (sleeps.ts), not before.
    if (job.phase !== 'suspended' || job.awaitingApproval || job.asleep || job.stopping || job.isOver) return;
    if ([...job.links.children, ...job.links.watching].some((child) => !child.isOver)) return;
    job.resume();
    this.#host.dispatcher.enqueueFirst(job);
  }

  /** Which children it had and what became of them; its usage with theirs. */
  childrenAtEnd(job: Job, ending: JobEnding): Partial<JobEnding> {
    const children = [...job.links.children];
    if (children.length === 0) return {};
    const live = children.filter((child) => !child.isOver);
    for (const child of live) this.#host.stop(child, 'cancel');
    let treeUsage = ending.usage;
    for (const child of children) {
      const record = child.record;
      if (child.isOver && record) treeUsage = mergeUsageByModel(treeUsage, record.treeUsage ?? record.usage);
    }
    return { children: children.map((child) => child.id), childrenOnEnd: live.length > 0 ? 'cancelled' : 'waited', treeUsage };
  }

  /**
   * A child's result goes to the job that spawned it, not to the session: posted to it while it
   * runs (put before its next model call), kept for its resume while it waits. Delivered here,
   * once; a child whose parent is gone is delivered to nobody (its parent's record says so).
   */
  deliverToParent(child: Job, record: Readonly<JobRecord>): void {
    if (record.parentJobId === undefined) return;
    const parent = child.links.parent;
    // Lenient: a disk that refuses the record must not keep the result from its parent (see markHandedToParent).
    this.#host.ledger.markHandedToParent(record.id, parent?.attempt?.iterations ?? parent?.record?.iterations ?? 0);
    if (parent) this.#deliverTo(parent, record);
    // Jobs that joined it get it too, once each (one that has ended since gets nothing).
    for (const watcher of child.links.dropWatchers()) if (!watcher.isOver) this.#deliverTo(watcher, record);
  }

  #watch(job: Job, child: Job): void {
    if (child.links.parent === job) return; // its own child, spawned twice: it gets it once anyway
    job.links.watch(child);
  }

  /**
   * Posts a child's result to a running parent job, or keeps it for the parent's resume; a parent
   * with no run now (asleep, paused for approvals, queued to go on) holds it for its next run,
   * durably. A sleeping parent is not woken early: it runs at the turn it asked for.
   */
  #deliverTo(parent: Job, record: Readonly<JobRecord>): void {
    const text = formatBackgroundResults([record], this.#host.config.background.resultMaxChars);
    if (parent.suspension) {
      parent.suspension.pending.push(text);
      this.maybeResume(parent);
    } else if (parent.attempt?.post({ type: 'child-results', childIds: [record.id], text })) {
      parent.results.posted(record.id, text);
    } else if (!parent.isOver) {
      parent.results.held.push(text);
      this.#host.ledger.waits.holdChildResults(parent.id, parent.results.held);
    }
  }
}

/**
 * A job may start only the agents the parent's model may (`agentTools`: an agent has no
 * allow-list of its own). Its tool's enum says so already; this is the main thread's own check.
 */
function checkAllowedAgent(config: ForkpoolConfig, agent: string | undefined): void {
  if (agent === undefined || config.agentTools.includes(agent)) return;
  const allowed = config.agentTools.length > 0 ? config.agentTools.map((name) => `"${name}"`).join(', ') : 'none';
  throw new JobError(
    'AGENT_UNKNOWN',
    '-',
    `agent: "${agent}" is not offered to a background job's spawn (agentTools: ${allowed}); leave it out to start a copy of yourself`,
  );
}

/**
 * A tree stays bounded: a job holds at most `maxChildrenPerJob` children, and no job spawns
 * while `nestedQueueLimit` jobs already wait for a slot. Each refusal names the setting, for the
 * job's model to do the work itself or wait for its children.
 */
function checkTreeBounds(background: ForkpoolConfig['background'], parent: Job, waiting: number): void {
  const { maxChildrenPerJob, nestedQueueLimit } = background;
  if (parent.links.children.length >= maxChildrenPerJob) {
    throw new JobError(
      'CHILDREN_LIMIT',
      parent.id,
      `job ${parent.id} has spawned ${parent.links.children.length} children, the most one job may (background.maxChildrenPerJob ${maxChildrenPerJob}): wait for their results or do the work yourself`,
    );
  }
  if (nestedQueueLimit > 0 && waiting >= nestedQueueLimit) {
    throw new JobError(
      'QUEUE_FULL',
      parent.id,
      `the background queue has ${waiting} jobs waiting, the most at which a job may spawn (background.nestedQueueLimit ${nestedQueueLimit}): do the work yourself or spawn later`,
    );
  }
}

/**
 * A child's tools are at most its parent's: the tools it asks for must all be the parent's
 * (else TOOL_NOT_ALLOWED, a tool error the parent's model reads); without `tools` it gets its
 * own (its agent's, else the config's) narrowed to the parent's. A job narrowed to read-only
 * tools therefore cannot start a child that writes.
 */
function childTools(config: ForkpoolConfig, parent: JobSpec, request: ChildSpawnRequest): string[] {
  const parentTools: readonly string[] = applySpawnSpec(configForAgent(parent.config, parent.agent), parent).tools;
  if (request.tools !== undefined) {
    // A name that is no tool at all is left to the spec's own check (TOOL_UNKNOWN names the tools there are).
    const extra = request.tools.find((name) => (BUILTIN_TOOL_NAMES as readonly string[]).includes(name) && !parentTools.includes(name));
    if (extra !== undefined) {
      const list = parentTools.length > 0 ? parentTools.join(', ') : 'none';
      throw new JobError(
        'TOOL_NOT_ALLOWED',
        parent.id,
        `tools: "${extra}" is not among the spawning job's tools (${list}); a child's tools are at most its parent's`,
      );
    }
    return request.tools;
  }
  // Its agent's tools (checked to exist by book; an unknown agent is refused there).
  const own: readonly string[] = request.agent !== undefined && config.agents[request.agent] ? configForAgent(config, request.agent).tools : config.tools;
  return own.filter((name) => parentTools.includes(name));
}

/** The last thing a job's model said, from a saved conversation. */
export function lastAssistantText(messages: readonly unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown };
    if (m?.role === 'assistant' && typeof m.content === 'string' && m.content.trim()) return m.content;
  }
  return '';
}
