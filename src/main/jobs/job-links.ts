// One job's links in the job tree (its `links`, job.ts): parent, children and the joins of
// identical spawns, apart so each link has one owner that keeps both of its ends.

/** What a job that watches, or is watched by, no other job reads (its sets are made at the first). */
const NO_JOBS: ReadonlySet<never> = new Set();

/**
 * One job's links in the job tree (nesting.ts walks them): the job that spawned it, its children,
 * and the joins of identical spawns — the jobs that joined it (watchers) and the other jobs'
 * children it joined (watching). Each link is kept on both ends, by this class alone, so a link
 * is made and dropped on both at once. `J` is the job (job.ts's `Job`), whose `links` this is.
 */
export class JobLinks<J extends { readonly links: JobLinks<J> }> {
  /** Its children, in spawn order; a forgotten child leaves the list (see JobTable.forget). */
  readonly children: J[] = [];
  readonly #job: J;
  #parent: J | undefined;
  /** Jobs that joined it (an identical spawn of another job's) and wait for its result too; made at the first. */
  #watchers: Set<J> | undefined;
  /** Other jobs' children this one joined and waits for; made at the first. */
  #watching: Set<J> | undefined;

  /** `job`'s links, under `parent` (its last child from now). */
  constructor(job: J, parent: J | undefined) {
    this.#job = job;
    this.#parent = parent;
    parent?.links.children.push(job);
  }

  /** The job that spawned it; undefined for a top-level job, or once its parent was forgotten. */
  get parent(): J | undefined {
    return this.#parent;
  }

  get watchers(): ReadonlySet<J> {
    return this.#watchers ?? NO_JOBS;
  }

  get watching(): ReadonlySet<J> {
    return this.#watching ?? NO_JOBS;
  }

  /** It joined `child` (another job's child, an identical spawn): it waits for that child's result too. */
  watch(child: J): void {
    (child.links.#watchers ??= new Set()).add(this.#job);
    (this.#watching ??= new Set()).add(child);
  }

  /** Its result goes to the jobs that joined it now: none watches it any more. Returns them. */
  dropWatchers(): J[] {
    const watchers = [...this.watchers];
    for (const watcher of watchers) watcher.links.#watching?.delete(this.#job);
    this.#watchers = undefined;
    return watchers;
  }

  /** Its record is gone: no link to or from it stays (see JobTable.forget). */
  unlink(): void {
    const siblings = this.#parent?.links.children;
    const at = siblings?.indexOf(this.#job) ?? -1;
    if (siblings && at >= 0) siblings.splice(at, 1);
    this.#parent = undefined;
    for (const child of this.children) child.links.#parent = undefined;
    this.children.length = 0;
    for (const other of this.watchers) other.links.#watching?.delete(this.#job);
    for (const other of this.watching) other.links.#watchers?.delete(this.#job);
    this.#watchers = undefined;
    this.#watching = undefined;
  }
}
