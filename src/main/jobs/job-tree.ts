import type { ResumeState } from '../../shared/protocol.js';

/** What a job that waits for its children keeps while it holds no slot and no thread. */
export interface Suspension {
  state: Omit<ResumeState, 'childResults'>;
  /** Children's results it has not seen yet, in the order they ended. */
  pending: string[];
}

/**
 * Who spawned whom, for nesting through the main thread: each job's children, the results a
 * running job was sent but may not have seen, and the jobs that wait for their children with
 * their slot given back. Plain bookkeeping; the manager decides.
 */
export class JobTree {
  readonly #parentOf = new Map<string, string>();
  readonly #children = new Map<string, string[]>();
  /** Results posted to a running parent, by child id (resent at resume if it never saw them). */
  readonly #sent = new Map<string, Map<string, string>>();
  readonly #suspended = new Map<string, Suspension>();
  /** Jobs being stopped: a child ending now must not resume them. */
  readonly #stopping = new Set<string>();

  add(parentId: string, childId: string): void {
    this.#parentOf.set(childId, parentId);
    const list = this.#children.get(parentId) ?? [];
    list.push(childId);
    this.#children.set(parentId, list);
  }

  parentOf(id: string): string | undefined {
    return this.#parentOf.get(id);
  }

  childrenOf(id: string): readonly string[] {
    return this.#children.get(id) ?? [];
  }

  recordSent(parentId: string, childId: string, text: string): void {
    const sent = this.#sent.get(parentId) ?? new Map<string, string>();
    sent.set(childId, text);
    this.#sent.set(parentId, sent);
  }

  /** The job suspends: results it was sent and did not see are kept for its resume. */
  suspend(id: string, state: Suspension['state'], seenChildren: readonly string[]): void {
    const seen = new Set(seenChildren);
    const unseen = [...(this.#sent.get(id) ?? new Map<string, string>())].filter(([child]) => !seen.has(child)).map(([, text]) => text);
    this.#sent.delete(id);
    this.#suspended.set(id, { state, pending: unseen });
  }

  suspension(id: string): Suspension | undefined {
    return this.#suspended.get(id);
  }

  suspendedIds(): string[] {
    return [...this.#suspended.keys()];
  }

  get suspendedCount(): number {
    return this.#suspended.size;
  }

  /** Takes the suspension off (the job resumes, or ends). */
  resume(id: string): Suspension | undefined {
    const suspension = this.#suspended.get(id);
    this.#suspended.delete(id);
    return suspension;
  }

  markStopping(id: string): void {
    this.#stopping.add(id);
  }

  isStopping(id: string): boolean {
    return this.#stopping.has(id);
  }

  /** The job has ended: forget what only mattered while it lived (its place in the tree stays for roll-ups). */
  ended(id: string): void {
    this.#sent.delete(id);
    this.#suspended.delete(id);
    this.#stopping.delete(id);
  }

  /** The job's record is gone for good: drop it from the tree. */
  forget(id: string): void {
    this.ended(id);
    this.#children.delete(id);
    this.#parentOf.delete(id);
  }
}
