import { HELD_RESULTS_ID, type JobSpec, type ResumeState } from '../../shared/protocol.js';

/**
 * The results of one job's children on their way to its runs (nesting.ts delivers them): posted
 * to its current run, by child id, until that run ends; held for its next run when it had no run
 * to post them to, or when its run ended without having read them. Never lost, never twice.
 */
export class ChildResults {
  /** Posted to its current run, by child id; made at the first (most jobs spawn no child). */
  #sent: Map<string, string> | undefined;
  /**
   * Children's results that came while it had no run to post them to (asleep, paused for
   * approvals, or queued to go on from either), or that a run was handed and ended without
   * reading: its next run reads them (see Job.takeHeldResults). The ledger keeps a copy on its
   * wait record, for a restart (sleeps.ts, approvals.ts).
   */
  readonly held: string[] = [];

  /** A child's result was posted to its current run. */
  posted(child: string, text: string): void {
    (this.#sent ??= new Map()).set(child, text);
  }

  /** Its run suspended having read `seen`: the results it was posted and did not read, in order; none stays posted. */
  takeUnread(seen: readonly string[]): string[] {
    const read = new Set(seen);
    const unread = [...(this.#sent ?? [])].filter(([child]) => !read.has(child)).map(([, text]) => text);
    this.#sent = undefined;
    return unread;
  }

  /**
   * Its run ended (paused, asleep, re-queued) having read `seen`: the results posted to it that it
   * did not read are held for the next run. `carried`: held results an approval resume carried
   * (its `resume.childResults`), held again when that run never read them (it slept or paused
   * again before a model call), as its conversation goes on without that `resume`.
   */
  holdUnread(seen: readonly string[], carried?: string): void {
    if (carried && !seen.includes(HELD_RESULTS_ID)) this.held.push(carried);
    for (const [child, text] of this.#sent ?? []) if (!seen.includes(child)) this.held.push(text);
    this.#sent = undefined;
  }

  /** The job ended: nothing posted or held stays. */
  clear(): void {
    this.#sent = undefined;
    this.held.length = 0;
  }
}

/**
 * `spec` with `held` joined to what its run goes on with: a run going on from its conversation
 * reads them as a user message; one going on from an approval pause after the approved calls
 * (the worker puts them before its next model call); a run from its task (a restart, a re-queue)
 * in its first turn, after the task (`spec.heldResults`).
 */
export function withHeldResults(spec: JobSpec, held: string): JobSpec {
  const joined = (before: string | undefined) => (before ? `${before}\n\n${held}` : held);
  const resume: ResumeState | undefined = spec.resume;
  return resume ? { ...spec, resume: { ...resume, childResults: joined(resume.childResults) } } : { ...spec, heldResults: joined(spec.heldResults) };
}
