import { realpathSync } from 'node:fs';
import type { ForkpoolConfig } from '../../shared/config.js';
import { JobError } from '../../shared/errors.js';
import { offeredTools } from '../../shared/spawn-spec.js';
import { branchSegment, composeBranch } from '../../shared/branch.js';
import type { ToolCatalog } from '../tools/catalog.js';
import { hiddenPathsForRoot } from '../../shared/tools/hidden.js';
import { AbortError } from '../../shared/errors.js';
import type { JobSpec } from '../../shared/protocol.js';
import type { JobBudgets } from '../limits/budgets.js';
import type { DeliveryLedger } from '../ledger/ledger.js';
import type { JobStore, StoredSpec } from '../ledger/ledger-store.js';
import { Job, type JobContext, type JobInit, type JobPhase } from './job.js';
import type { SpawnDedup, DedupMatch } from './dedup.js';
import type { WaveJoins } from './joins.js';
import type { ResumeOrigin } from './resumes.js';
import type { JobWorktree } from './worktrees.js';
import type { JobWorktrees } from './job-worktrees.js';
import { admitSpawn, checkSpawn, withJsonOutputSchema, type SpawnOptions, type SpawnRequest } from './manager-api.js';

/** What booking needs besides the table: the config, the ledger and the books a spawn is entered in. */
export interface TableHost {
  readonly config: ForkpoolConfig;
  readonly ledger: DeliveryLedger;
  readonly store: JobStore | undefined;
  readonly dedup: SpawnDedup;
  readonly budgets: Pick<JobBudgets, 'admit'>;
  readonly waves: WaveJoins;
  readonly worktrees: JobWorktrees;
  readonly context: JobContext;
  readonly tools: ToolCatalog;
  /** Jobs run in other processes (BullMQ): a host tool cannot reach them, so a spawn offering one is refused. */
  readonly remoteExecutor: boolean;
  /** The manager's `remote` executor, if it has one; `refusal`: it refuses every spawn (refuseRemoteSpawner). */
  readonly remote: { refusal: string | undefined } | undefined;
  /** Queued jobs that would wait for a slot now (admission's QUEUE_FULL). */
  waitingForSlot(): number;
}

/**
 * A job's spec as the durable ledger keeps it: without its config (it comes from the session
 * that resumes it) and without `resume` (recovery rebuilds it from the old job's kept
 * conversation, resumes.ts); with its dedup key and its worktree (recovery.ts runs it there again).
 */
export function storedSpecOf(spec: JobSpec, dedupKey: string | undefined, worktree: Readonly<JobWorktree> | undefined, worktreePending = false): StoredSpec {
  // Held results live on the record's wait record (the ledger's), not on a copy of the spec.
  const { config: _config, resume: _resume, processTag: _tag, heldResults: _held, ...kept } = spec;
  return {
    ...kept,
    ...(dedupKey !== undefined ? { dedupKey } : {}),
    ...(worktree ? { worktree: { ...worktree } } : worktreePending ? { worktreePending: true as const } : {}),
  };
}

/**
 * A job a spawn made: a new one, or one an identical spawn joined (see dedup.ts). `worktreeFrom`:
 * the new job's worktree is still to be made from that folder before its first launch (engine.ts).
 */
export type Booking = { kind: 'new'; job: Job; worktreeFrom?: string } | { kind: 'joined'; match: DedupMatch };

/** Where a nested spawn sits: the job that asked for it, and its depth. */
export interface Nested {
  parent: Job;
  depth: number;
}

/**
 * Every job the ledger knows, by id and by name: booked at spawn (or found again by restart
 * recovery), forgotten when the ledger's retention forgets its record, with its links in the
 * job tree. A name is held by one live job at a time; the newest job that had it is still found by it.
 */
export class JobTable {
  readonly #host: TableHost;
  readonly #jobs = new Map<string, Job>();
  readonly #holders = new Map<string, Job>();
  /** The newest job that had each name, until that job is forgotten. */
  readonly #lastHolders = new Map<string, Job>();

  constructor(host: TableHost) {
    this.#host = host;
  }

  /**
   * Books a spawn: admission, the ledger's record (written before anything else knows of it),
   * its budget lease, name, dedup key, tree link, spec and wave. Throws ABORTED,
   * TOOL_ARGUMENTS_INVALID, AGENT_UNKNOWN, QUEUE_FULL, NAME_TAKEN or the budget's codes. Not
   * queued: the caller hands a new job to the dispatcher.
   */
  book(given: SpawnRequest, options: SpawnOptions, nested: Nested | undefined, resume?: ResumeOrigin): Booking {
    const { config, ledger, dedup } = this.#host;
    // A library caller's zod output schema becomes JSON Schema here, before dedup and admission see it.
    const request = withJsonOutputSchema(given);
    // On a remote executor an MCP tool runs on the worker, from the worker's own servers, which this
    // host cannot know: the worker decides, and fails a job naming one it lacks (worker-policy.ts).
    if (options.signal?.aborted) throw new AbortError(options.signal.reason);
    const runsRemote = this.#host.remoteExecutor || this.#checkRemote(request);
    const workerDecides = (name: string) => runsRemote && name.startsWith('mcp__');
    // The spawn's one validation (manager-api.ts): the fields, the agent and the spec, whatever door it came through.
    const checked = checkSpawn(request, config, (name) => this.#host.tools.knows(name) || workerDecides(name));
    const { data, role, agent, spec: ownSpec } = checked;
    // An identical request joins the running job or reuses a fresh result (see dedup.ts).
    // A resume never joins another job: its task is an instruction to a conversation, not a question of its own.
    // Nor does a guess: a real spawn must not attach to a job that may be cancelled as a guess.
    const dedupKey = resume === undefined && options.dedup !== false && !data.speculative ? dedup.keyFor(request, nested !== undefined) : undefined;
    const match = dedupKey === undefined ? undefined : dedup.find(dedupKey, (id) => ledger.get(id));
    if (match) return { kind: 'joined', match };
    // A join takes no slot: only a new job is refused for a full queue or a taken name.
    admitSpawn(
      checked,
      config,
      this.#host.waitingForSlot(),
      (name) => this.#holders.get(name)?.id,
      (id) => ledger.get(id)?.state,
    );
    // A name a tool source claims but has not listed (an MCP server still connecting, or down) is
    // not offered: the job's record says which tools it really has.
    const tools = offeredTools(config, agent, ownSpec).filter((name) => this.#host.tools.get(name) !== undefined || workerDecides(name));
    // A remote job's MCP tools are the worker's (from its own servers): never this host's stubs.
    const hostTools = this.#host.tools.hostStubs(tools).filter((stub) => !workerDecides(stub.name));
    if (runsRemote && hostTools.length > 0) {
      const names = hostTools.map((stub) => stub.name).join(', ');
      throw new JobError(
        'TOOL_NOT_ALLOWED',
        '-',
        `tools: ${names} run on this host's main thread, and this job would run on a remote worker; leave them out of its tools`,
      );
    }
    // No git here: a new worktree is checked for and made before the job's first launch, off the main thread (engine.ts).
    // A child works where its parent job does: in the parent's worktree, or in a worktree of it.
    const workspaceRoot = nested?.parent.spec?.config.workspaceRoot ?? config.workspaceRoot;
    // A resume of a worktree job goes on in that job's worktree (its changes are there); handed over once booked.
    const inherited = resume ? this.#host.worktrees.inheritable(resume.from) : undefined;
    const wantsTree = (data.workspace ?? config.background.workspace) === 'worktree';
    const worktreeFrom = wantsTree && !inherited ? workspaceRoot : undefined;
    const budget = this.#host.budgets.admit(agent, data.budget);
    const id = ledger.newId();
    const wave = data.wave ?? null;
    const link = nested ? { parentJobId: nested.parent.id, depth: nested.depth } : {};
    // Its place in the agent tree (issue 38, B20): under its parent job's branch, or the top level's ('').
    const branch = composeBranch(nested ? (ledger.get(nested.parent.id)?.branch ?? '') : '', branchSegment({ name: data.name, agent, id }));
    const tree = inherited;
    const record = ledger.add({
      id,
      label: data.label || data.name || id,
      task: data.task,
      role,
      wave,
      ...(agent !== undefined ? { agent } : {}),
      ...(data.name !== undefined ? { name: data.name } : {}),
      ...(data.parentToolId !== undefined ? { parentToolId: data.parentToolId } : {}),
      ...link,
      branch,
      ...(resume ? { resumedFrom: resume.from } : {}),
      ...(data.speculative ? { speculative: 'pending' as const } : {}),
      budget: budget.limits,
      tools,
    });
    // After the ledger took it: a spawn the durable ledger refused (LEDGER_WRITE_FAILED) holds no lease.
    budget.hold(id);
    const spec: JobSpec = {
      id,
      label: record.label,
      task: record.task,
      role: record.role,
      // The job's tools and sandbox are confined to its worktree.
      config: tree || workspaceRoot !== config.workspaceRoot ? configInCopy(config, tree?.workspaceRoot ?? workspaceRoot) : config,
      attempt: 1,
      ...(data.parentSummary ? { parentSummary: data.parentSummary } : {}),
      ...(agent !== undefined ? { agent } : {}),
      ...(data.parentToolId !== undefined ? { parentToolId: data.parentToolId } : {}),
      ...(nested ? { depth: nested.depth } : {}),
      ...(resume ? { resume: resume.state } : {}),
      ...(data.executor === 'remote' ? { executor: 'remote' as const } : {}),
      budget: budget.limits,
      ...ownSpec,
      ...(hostTools.length > 0 ? { hostTools } : {}),
    };
    const job = this.add(spec, 'queued', { parent: nested?.parent, name: data.name, dedupKey });
    if (inherited && resume) this.#host.worktrees.handOver(resume.from, id);
    if (data.speculative) job.speculation = 'pending';
    if (dedupKey !== undefined) dedup.booked(id, dedupKey);
    if (wave !== null) this.#host.waves.add(wave, id, data.join);
    // Beside the record, lenient: without it a restart rebuilds the spec from the record.
    const store = this.#host.store;
    const ownTree = this.#host.worktrees.get(id);
    // A worktree still to be made is marked: a restart before it is ends the job, never runs it in the workspace (recovery.ts).
    if (store) ledger.writeAside(`job ${id}'s spec`, () => store.putSpec(storedSpecOf(spec, dedupKey, ownTree, worktreeFrom !== undefined)));
    return { kind: 'new', job, ...(worktreeFrom !== undefined ? { worktreeFrom } : {}) };
  }

  /** True for a spawn that asks to run remote and may; throws EXECUTOR_UNAVAILABLE or REMOTE_REFUSED when it may not. */
  #checkRemote(request: SpawnRequest): boolean {
    // Before admission checks the shape: a request may be anything (null included) here.
    if (request?.executor !== 'remote') return false;
    const remote = this.#host.remote;
    if (!remote)
      throw new JobError(
        'EXECUTOR_UNAVAILABLE',
        '-',
        'executor "remote": this manager has no remote executor (BackgroundManagerOptions.remote); leave executor out or use "local"',
      );
    if (remote.refusal !== undefined) throw new JobError('REMOTE_REFUSED', '-', `remote spawns are refused on this host: ${remote.refusal}`);
    return true;
  }

  /** A job whose record the ledger has: at spawn, or found again by restart recovery. */
  add(spec: JobSpec, phase: JobPhase, links: Pick<JobInit, 'parent' | 'name' | 'dedupKey'> = {}): Job {
    const job = new Job({ ...links, id: spec.id, spec, phase }, this.#host.context);
    this.#jobs.set(job.id, job);
    if (phase !== 'ended') this.claimName(job);
    return job;
  }

  get(id: string): Job | undefined {
    return this.#jobs.get(id);
  }

  /** A job by id or by name (the live holder of a name first, else the newest job that had it). */
  find(idOrName: string): Job | undefined {
    return this.#jobs.get(idOrName) ?? this.#holders.get(idOrName) ?? this.#lastHolders.get(idOrName);
  }

  /** The live job holding `name`, if any. */
  holder(name: string): Job | undefined {
    return this.#holders.get(name);
  }

  /** The job (live again, or new) holds its name, unless another live job does. */
  claimName(job: Job): void {
    const name = job.name;
    if (name === undefined || (this.#holders.get(name) ?? job) !== job) return;
    this.#holders.set(name, job);
    this.#lastHolders.set(name, job);
  }

  /** The job ended: its name is free for a new job (and still finds it until then). */
  releaseName(job: Job): void {
    const name = job.name;
    if (name !== undefined && this.#holders.get(name) === job) this.#holders.delete(name);
  }

  /** The ledger forgot the job's record (retention): the job, its name and its links in the tree go too. */
  forget(id: string): void {
    const job = this.#jobs.get(id);
    if (!job) return;
    this.#jobs.delete(id);
    const name = job.name;
    if (name !== undefined && this.#holders.get(name) === job) this.#holders.delete(name);
    if (name !== undefined && this.#lastHolders.get(name) === job) this.#lastHolders.delete(name);
    job.links.unlink();
  }

  get size(): number {
    return this.#jobs.size;
  }
}

/** The config of a job working in `jobRoot`, a worktree of the main workspace: its hidden paths hold there too. */
export function configInCopy(config: ForkpoolConfig, jobRoot: string): ForkpoolConfig {
  const mainRoots = [config.workspaceRoot, realpathOrSelf(config.workspaceRoot)];
  return { ...config, workspaceRoot: jobRoot, hiddenPaths: hiddenPathsForRoot(config.hiddenPaths, mainRoots, jobRoot) };
}

function realpathOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}
