import { maxDepthFor } from '../../shared/agents.js';
import type { ForkpoolConfig } from '../../shared/config.js';
import { JobError, errorMessage } from '../../shared/errors.js';
import type { ChildSpawnRequest, JobSpec, ResumeState } from '../../shared/protocol.js';
import { mergeUsageByModel } from '../../shared/usage.js';
import type { Attempt } from '../executors/attempt.js';
import { formatBackgroundResults } from '../views/delivery-format.js';
import type { StopRequest } from './job-endings.js';
import { JobTree } from './job-tree.js';
import type { DeliveryLedger, JobEnding, JobRecord } from '../ledger/ledger.js';
import type { JobHandle, SpawnOptions, SpawnRequest } from './manager.js';

/** What nesting needs of the manager: its books, and the few moves only the manager makes. */
export interface NestingHost {
  readonly config: ForkpoolConfig;
  readonly ledger: DeliveryLedger;
  readonly specs: Map<string, JobSpec>;
  readonly live: Map<string, Attempt>;
  book(request: SpawnRequest, options: SpawnOptions, nesting: { parentJobId: string; depth: number }): JobHandle;
  stop(id: string, reason: StopRequest): void;
  /** Puts a job first in the queue, as a fresh launch. */
  requeueFirst(id: string): void;
  pump(): void;
}

/**
 * Depth above 1 through the main thread: a job's spawn (over its port) is booked by the one
 * manager under its depth, cap and queue; a child's result goes to the job that spawned it; a
 * job that answers with children running is suspended (its slot and thread given back, so
 * parents waiting on children can never hold every slot) and resumed once they have all ended.
 */
export class Nesting {
  readonly tree = new JobTree();
  readonly #host: NestingHost;
  /**
   * De-duplication across parents: jobs that joined another job's child (an identical spawn)
   * by child id, and the children each such job waits for. Not its children: it neither owns,
   * cancels nor rolls up their usage; it is only given their result, once.
   */
  readonly #watchers = new Map<string, Set<string>>();
  readonly #watching = new Map<string, Set<string>>();

  constructor(host: NestingHost) {
    this.#host = host;
  }

  /** A job asks for a child: the depth, the cap and the queue are enforced here, as for any spawn. */
  spawnChild(attempt: Attempt, requestId: number, request: ChildSpawnRequest): void {
    const parentId = attempt.jobId;
    const spec = this.#host.specs.get(parentId);
    const parent = this.#host.ledger.get(parentId);
    const depth = (spec?.depth ?? 1) + 1;
    const limit = spec ? maxDepthFor(this.#host.config, spec.agent) : 1;
    try {
      if (!spec || !parent) throw new JobError('JOB_UNKNOWN', parentId, `job ${parentId} is not running`);
      if (depth > limit) throw new JobError('DEPTH_EXCEEDED', parentId, `job ${parentId} is at depth ${depth - 1}, the most allowed is ${limit}: it cannot spawn`);
      const handle = this.#host.book(
        { task: request.task, label: request.label, role: parent.role, wave: null, ...(request.agent ? { agent: request.agent } : {}), ...(request.name ? { name: request.name } : {}) },
        {},
        { parentJobId: parentId, depth },
      );
      attempt.post({ type: 'spawn-result', requestId, ok: true, childId: handle.id, label: handle.label, ...(handle.joined ? { joined: handle.joined } : {}) });
      if (handle.joined === 'attached') this.#watch(parentId, handle.id);
      else if (handle.joined === 'reused') this.#deliverTo(parentId, this.#host.ledger.get(handle.id) as JobRecord);
    } catch (error) {
      const code = error instanceof JobError ? error.code : 'INTERNAL';
      attempt.post({ type: 'spawn-result', requestId, ok: false, code, message: errorMessage(error) });
    }
  }

  /** It answered with children running: its slot and thread go back until they end. */
  suspend(attempt: Attempt, state: Omit<ResumeState, 'childResults'>, seenChildren: string[]): void {
    const id = attempt.jobId;
    attempt.dispose();
    this.#host.live.delete(id);
    this.#host.ledger.suspend(id);
    this.tree.suspend(id, state, seenChildren);
    this.maybeResume(id);
    this.#host.pump();
  }

  /** A waiting job whose children have all ended runs again, first in the queue, with their results. */
  maybeResume(id: string): void {
    const suspension = this.tree.suspension(id);
    if (!suspension || this.tree.isStopping(id)) return;
    const waitsFor = [...this.tree.childrenOf(id), ...(this.#watching.get(id) ?? [])];
    if (waitsFor.some((child) => this.#host.ledger.get(child)?.state !== 'ended')) return;
    this.tree.resume(id);
    const spec = this.#host.specs.get(id) as JobSpec;
    this.#host.specs.set(id, { ...spec, resume: { ...suspension.state, childResults: suspension.pending.join('\n\n') } });
    this.#host.requeueFirst(id);
  }

  /** Which children it had and what became of them; its usage with theirs. */
  childrenAtEnd(id: string, ending: JobEnding): Partial<JobEnding> {
    const children = this.tree.childrenOf(id);
    if (children.length === 0) return {};
    const live = children.filter((child) => this.#host.ledger.get(child)?.state !== 'ended');
    for (const child of live) this.#host.stop(child, 'cancel');
    let treeUsage = ending.usage;
    for (const child of children) {
      const record = this.#host.ledger.get(child);
      if (record?.state === 'ended') treeUsage = mergeUsageByModel(treeUsage, record.treeUsage ?? record.usage);
    }
    return { children: [...children], childrenOnEnd: live.length > 0 ? 'cancelled' : 'waited', treeUsage };
  }

  /**
   * A child's result goes to the job that spawned it, not to the session: posted to it while it
   * runs (put before its next model call), kept for its resume while it waits. Delivered here,
   * once; a child whose parent is gone is delivered to nobody (its parent's record says so).
   */
  deliverToParent(record: Readonly<JobRecord>): void {
    const parentId = record.parentJobId;
    if (parentId === undefined) return;
    const parentAttempt = this.#host.live.get(parentId);
    this.#host.ledger.markDelivered(record.id, parentAttempt?.iterations ?? this.#host.ledger.get(parentId)?.iterations ?? 0);
    this.#deliverTo(parentId, record);
    // Jobs that joined it get it too, once each (one that has ended since gets nothing).
    for (const watcher of this.#watchers.get(record.id) ?? []) {
      this.#watching.get(watcher)?.delete(record.id);
      if (this.#watching.get(watcher)?.size === 0) this.#watching.delete(watcher);
      if (this.#host.ledger.get(watcher)?.state !== 'ended') this.#deliverTo(watcher, record);
    }
    this.#watchers.delete(record.id);
  }

  #watch(parentId: string, childId: string): void {
    if (this.tree.parentOf(childId) === parentId) return; // its own child, spawned twice: it gets it once anyway
    const watchers = this.#watchers.get(childId) ?? new Set<string>();
    watchers.add(parentId);
    this.#watchers.set(childId, watchers);
    const watching = this.#watching.get(parentId) ?? new Set<string>();
    watching.add(childId);
    this.#watching.set(parentId, watching);
  }

  /** Posts a child's result to a running parent job, or keeps it for the parent's resume. */
  #deliverTo(parentId: string, record: Readonly<JobRecord>): void {
    const parentAttempt = this.#host.live.get(parentId);
    const text = formatBackgroundResults([record], this.#host.config.background.resultMaxChars);
    const suspension = this.tree.suspension(parentId);
    if (suspension) {
      suspension.pending.push(text);
      this.maybeResume(parentId);
    } else if (parentAttempt?.post({ type: 'child-results', childIds: [record.id], text })) {
      this.tree.recordSent(parentId, record.id, text);
    }
  }
}

/** The last thing a job's model said, from a saved conversation. */
export function lastAssistantText(messages: readonly unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown };
    if (m?.role === 'assistant' && typeof m.content === 'string' && m.content.trim()) return m.content;
  }
  return '';
}

