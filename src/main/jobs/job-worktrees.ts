import { WORKTREE_LIMITS } from '../../shared/fixed-limits.js';
import { existsSync } from 'node:fs';
import { JobError } from '../../shared/errors.js';
import {
  actOnWorktree,
  createWorktree,
  worktreeBase,
  describe,
  finishWorktree,
  removeWorktree,
  type CommitLimits,
  type JobWorktree,
  type WorktreeAction,
} from './worktrees.js';

/** One job's worktree and the git work on it, one command sequence at a time. */
interface Entry {
  tree: JobWorktree;
  /** The git work under way on it (a commit, a merge): the next waits for it, so two never overlap. */
  busy: Promise<unknown>;
  /** Its commit ran before the job's ending was recorded (see {@link JobWorktrees.commit}): the text that ending says. */
  settled: string | undefined;
}

export interface JobWorktreesOptions {
  /** `background.worktreeDir` ('' for the cache folder). */
  dir: string;
  /** Each change of a tree's state, to keep beside its job in the durable ledger. */
  persist?: (tree: Readonly<JobWorktree>) => void;
  /** What has no caller to throw to (a commit after an ending, a removal). */
  reportFault?: (what: string, error: unknown) => void;
  /** The bounds of one job's commit; default WORKTREE_LIMITS. */
  limits?: CommitLimits;
}

/**
 * The worktrees of one manager's jobs, by job id. Owns each `JobWorktree`'s state: every change
 * goes through here, in order, and is handed to `persist` (the durable ledger keeps it beside
 * the job's spec, so a restart finds the worktree again: recovery.ts).
 */
export class JobWorktrees {
  readonly #entries = new Map<string, Entry>();
  readonly #o: Required<JobWorktreesOptions>;
  /** The worktrees being made (see {@link prepare}), one after another. */
  #preparing: Promise<unknown> = Promise.resolve();
  /** Worktree jobs whose worktree is not made (yet, or ever: refused, stopped first, or cut off by a restart): none may run in the workspace instead. */
  readonly #unmade = new Set<string>();

  constructor(options: JobWorktreesOptions) {
    this.#o = { persist: () => {}, reportFault: () => {}, limits: WORKTREE_LIMITS, ...options };
  }

  /**
   * Makes job `jobId`'s worktree before its first launch: the checks (worktreeBase) and the
   * `git worktree add`, awaited off the main thread, one job's at a time (two adds never race for
   * a name). A job no longer `wanted` by then (cancelled, or the manager closed) leaves no
   * worktree: it is removed again and undefined is returned. Rejects `WORKTREE_UNAVAILABLE`.
   */
  prepare(jobId: string, workspaceRoot: string, wanted: () => boolean): Promise<JobWorktree | undefined> {
    this.#unmade.add(jobId);
    const made = this.#preparing.then(async () => {
      if (!wanted()) return undefined;
      const tree = await createWorktree(await worktreeBase(workspaceRoot), jobId, this.#o.dir);
      if (!wanted()) {
        await removeWorktree(tree).catch((error: unknown) => this.#o.reportFault(`removing the worktree of job ${jobId}, stopped while it was made`, error));
        return undefined;
      }
      const entry: Entry = { tree, busy: Promise.resolve(), settled: undefined };
      this.#entries.set(jobId, entry);
      this.#unmade.delete(jobId);
      this.#safePersist(tree);
      return tree;
    });
    this.#preparing = made.catch(() => undefined);
    return made;
  }

  /** A worktree job whose worktree was never made (see {@link prepare}); recovery.ts marks those a restart cut off. */
  unmade(jobId: string): boolean {
    return this.#unmade.has(jobId);
  }

  /** A restart found job `jobId` still waiting for its worktree (recovery.ts): it never runs without one. */
  markUnmade(jobId: string): void {
    this.#unmade.add(jobId);
  }

  /** Retention forgot the job. */
  forgetUnmade(jobId: string): void {
    this.#unmade.delete(jobId);
  }

  /** Settles once every worktree asked for so far is made (or refused, or removed again): close() awaits it, so none is left behind. */
  prepared(): Promise<void> {
    return this.#preparing.then(() => undefined);
  }

  /**
   * A worktree the durable ledger kept for a job found again at a restart (recovery.ts). A job
   * that had ended, or ends now as interrupted (`ended`: its label), with its tree still open
   * has its changes committed now, in the background. Returns whether the worktree's folder is still there.
   */
  adopt(stored: JobWorktree, ended: string | undefined): boolean {
    const entry: Entry = { tree: { ...stored }, busy: Promise.resolve(), settled: undefined };
    this.#entries.set(stored.jobId, entry);
    const present = existsSync(entry.tree.path);
    // It runs again: no merge or drop until that run ended and was committed.
    if (ended === undefined && (entry.tree.state === 'kept' || entry.tree.state === 'uncommitted')) entry.tree.state = 'open';
    const open = entry.tree.state === 'open' && entry.tree.handedTo === undefined;
    if (ended !== undefined && open && present) {
      void this.#queue(entry, () => finishWorktree(entry.tree, ended, this.#o.limits)).catch((error: unknown) =>
        this.#o.reportFault(this.#notCommitted(entry.tree, error), error),
      );
    }
    return present;
  }

  /** The worktree a resume of job `from` goes on in: its ended job's kept (or uncommitted) changes. */
  inheritable(from: string): Readonly<JobWorktree> | undefined {
    const tree = this.#entries.get(from)?.tree;
    return tree && tree.handedTo === undefined && (tree.state === 'kept' || tree.state === 'uncommitted') ? { ...tree } : undefined;
  }

  /** Job `to` (a resume of `from`) works on in `from`'s worktree and branch from now on; `from`'s entry says where it went. */
  handOver(from: string, to: string): void {
    const old = this.#entries.get(from);
    if (!old) return;
    const tree: JobWorktree = { ...old.tree, jobId: to, state: 'open' };
    delete tree.changed;
    delete tree.problem;
    this.#entries.set(to, { tree, busy: old.busy, settled: undefined });
    this.#change(old, () => (old.tree.handedTo = to));
  }

  get(jobId: string): Readonly<JobWorktree> | undefined {
    const tree = this.#entries.get(jobId)?.tree;
    return tree && { ...tree, ...(tree.changed ? { changed: [...tree.changed] } : {}) };
  }

  /** The job's run ended (it did not suspend): back to open, as it runs again after a restart. */
  reopen(jobId: string): void {
    const entry = this.#entries.get(jobId);
    if (entry?.tree.state === 'kept' || entry?.tree.state === 'uncommitted') this.#change(entry, () => (entry.tree.state = 'open'));
  }

  /**
   * Before a job's ending is recorded (runner.ts awaits it): its changes are committed on its
   * branch, off the main thread. Never rejects (finishWorktree says a failure in its text); the
   * ending's {@link finish} then says the result. Undefined for a job in the shared workspace.
   */
  commit(jobId: string, label: string): Promise<void> | undefined {
    const entry = this.#entries.get(jobId);
    if (!entry) return undefined;
    return this.#queue(entry, () => finishWorktree(entry.tree, label, this.#o.limits)).then(
      (text) => void (entry.settled = text),
      (error: unknown) => void (entry.settled = this.#notCommitted(entry.tree, error)),
    );
  }

  /**
   * At the job's end: the sentence its result ends with (undefined for a job in the shared
   * workspace). An ending that came without {@link commit} (cancelled while queued or waiting for
   * its children, ended from outside) has its changes committed now, after the ending: its text
   * says so. One that `close()` caused leaves the tree as it is: with a durable ledger the job is
   * still unfinished on disk, and the next process runs it there again (recovery.ts).
   */
  finish(jobId: string, label: string, byClose = false): string | undefined {
    const entry = this.#entries.get(jobId);
    if (!entry) return undefined;
    const settled = entry.settled;
    entry.settled = undefined;
    if (settled !== undefined) return settled;
    if (byClose && entry.tree.state === 'open')
      return `Worktree ${entry.tree.path} (branch ${entry.tree.branch}): left as it is; the manager closed before the job ended.`;
    if (entry.tree.state !== 'open' && entry.tree.state !== 'kept' && entry.tree.state !== 'uncommitted') return describe(entry.tree);
    // After the ending: a failure has no caller, so it is reported (a rejection here would exit the host).
    void this.#queue(entry, () => finishWorktree(entry.tree, label, this.#o.limits)).catch((error: unknown) =>
      this.#o.reportFault(this.#notCommitted(entry.tree, error), error),
    );
    return (
      `Worktree ${entry.tree.path} (branch ${entry.tree.branch}): the job ended before its changes were committed; ` +
      'they are being committed now. background_worktree merges, keeps or drops them once that is done.'
    );
  }

  /** Merges, keeps or drops an ended job's worktree, after any git work under way on it. Rejects with `WORKTREE_ACTION_FAILED`. */
  async act(jobId: string, action: WorktreeAction): Promise<string> {
    const entry = this.#entries.get(jobId);
    if (!entry) throw new JobError('WORKTREE_ACTION_FAILED', jobId, `job ${jobId} ran in the shared workspace: it has no worktree to ${action}`);
    const to = entry.tree.handedTo;
    if (to !== undefined) {
      throw new JobError(
        'WORKTREE_ACTION_FAILED',
        jobId,
        `job ${jobId}'s worktree (branch ${entry.tree.branch}) went on with job ${to}, which resumed it: ${action} it through job ${to}`,
      );
    }
    return this.#queue(entry, () => actOnWorktree(entry.tree, action));
  }

  /** Runs `work` after what is under way on the tree, and persists the tree's state after it (whether it succeeded or not). */
  #queue<T>(entry: Entry, work: () => Promise<T>): Promise<T> {
    const run = entry.busy.then(work).finally(() => this.#safePersist(entry.tree));
    entry.busy = run.catch(() => undefined);
    return run;
  }

  #notCommitted(tree: JobWorktree, error: unknown): string {
    return `Worktree ${tree.path} (branch ${tree.branch}): its changes were not committed: ${error instanceof Error ? error.message : String(error)}. It is kept as it is.`;
  }

  #change(entry: Entry, change: () => void): void {
    change();
    this.#safePersist(entry.tree);
  }

  #safePersist(tree: JobWorktree): void {
    try {
      this.#o.persist(tree);
    } catch (error) {
      this.#o.reportFault(`keeping job ${tree.jobId}'s worktree in the ledger`, error);
    }
  }
}
