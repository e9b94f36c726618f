import type { JobSpec, ResumeState } from '../../shared/protocol.js';
import type { Attempt } from '../executors/attempt.js';
import type { ApprovalRecord } from '../../shared/approvals.js';
import type { DeliveryLedger, JobEnding, JobRecord, Speculation } from '../ledger/ledger.js';
import type { JobPhase, JobState, Suspension } from './job-phases.js';
import { JobInbox } from './inbox.js';
import { ChildResults, withHeldResults } from './job-results.js';
import { JobLinks } from './job-links.js';

export type { JobPhase, JobState, Suspension } from './job-phases.js';

/** What a job needs of the manager around it. */
export interface JobContext {
  readonly ledger: DeliveryLedger;
  /** With a durable ledger each launch is written before it happens (see JobRecord.dispatched). */
  readonly durable: boolean;
  /** Every change of phase: the dispatcher counts live and suspended jobs from it. */
  moved(job: Job, from: JobPhase, to: JobPhase): void;
  /** The ending as recorded: what the budget and the job's children add to it. */
  completeEnding(job: Job, ending: JobEnding): JobEnding;
  /** After the record has ended: the rest of the manager hears of it, each part apart (a throw in one is reported, never thrown). */
  ended(job: Job, record: Readonly<JobRecord>): void;
  /** An error with no caller to throw to (a job's end runs from an event): logged, never thrown. */
  reportFault(what: string, error: unknown): void;
}

export interface JobInit {
  id: string;
  spec: JobSpec;
  phase: JobPhase;
  parent?: Job | undefined;
  name?: string | undefined;
  dedupKey?: string | undefined;
}

/**
 * One background job from spawn to forget: its spec, its record (read through the ledger,
 * which keeps it), its current {@link Attempt}, its place in the job tree, its name, dedup key,
 * alerts, result waiters and abort-signal cleanup, and its phases (job-phases.ts), persisted
 * through the ledger. Its ending is {@link end}: once, and never a throw.
 */
export class Job {
  readonly id: string;
  /** A name given at spawn, unique among live jobs (see JobTable). */
  readonly name: string | undefined;
  /** Its dedup key, if identical spawns may join it (see dedup.ts). */
  readonly dedupKey: string | undefined;
  /** What a launch runs; dropped once a restart can no longer ask for it (see restarts.ts). */
  spec: JobSpec | undefined;
  /** The launch running now (dispatched or running), else undefined. */
  attempt: Attempt<Job> | undefined;
  /** Launches since it was last queued afresh; bounds re-queues of a job whose thread dies. */
  launches = 0;
  /** It is being stopped to run again (restart), not to end. */
  restartPending = false;
  /** Being stopped: a child ending now must not resume it. */
  stopping = false;
  /** A speculative job's standing (see speculation.ts); undefined for an ordinary one. */
  speculation: Speculation | undefined;
  /** Why it was dropped as a guess (its ending's error says so). */
  dropReason: string | undefined;
  /** Its place in the job tree: parent, children, and the joins of identical spawns (job-links.ts). */
  readonly links: JobLinks<Job>;
  /** While suspended: what it resumes with. */
  suspension: Suspension | undefined;
  /** Paused for approvals (suspended with no {@link suspension}): see approvals.ts. */
  awaitingApproval = false;
  /** Asleep until its scheduled turn (suspended with no {@link suspension}): see sleeps.ts. */
  asleep = false;
  /** When its current run said `started` (epoch ms): its wall clock pauses while it waits for approvals. */
  runningSince: number | undefined;
  /** Wall-clock ms it ran before its latest approval wait (its timeout counts on from there). */
  ranMs = 0;
  /** Its children's results on their way to its runs: posted to the current one, or held for the next (job-results.ts). */
  readonly results = new ChildResults();
  /** Messages sent to it (send_to_background_agent); see inbox.ts and steering.ts. */
  readonly inbox = new JobInbox();
  /** While its worktree is made (engine.ts): settles when it is; rejects WORKTREE_UNAVAILABLE when it was refused. */
  worktreeReady: Promise<void> | undefined;
  /** The latest attempt that sent a model request (each attempt counts once in its record's modelRuns). */
  #reachedModel: Attempt<Job> | undefined;
  #phase: JobPhase;
  readonly #ctx: JobContext;
  /** Alerts sent (bounded by `maxAlertsPerJob`; a restart while running does not reset it). */
  #alerts = 0;
  readonly #waiters: Array<(record: Readonly<JobRecord>) => void> = [];
  #signalCleanup: (() => void) | undefined;
  /** Inside end(), before its ending is recorded: a re-entered end() is a no-op. */
  #ending = false;
  /** Where a run from its start begins: a resumed job's kept conversation with its instruction, else its task (none). */
  readonly #startFrom: ResumeState | undefined;

  constructor(init: JobInit, ctx: JobContext) {
    this.id = init.id;
    this.name = init.name;
    this.spec = init.spec;
    this.#phase = init.phase;
    this.dedupKey = init.dedupKey;
    this.#ctx = ctx;
    this.#startFrom = init.spec.resume;
    this.links = new JobLinks<Job>(this, init.parent);
  }

  /** Its current attempt sent a model request: true the first time for each attempt, then false. */
  firstModelRequest(): boolean {
    if (!this.attempt || this.#reachedModel === this.attempt) return false;
    this.#reachedModel = this.attempt;
    return true;
  }

  /** Its record: the ledger's frozen value, replaced at every transition. */
  get record(): Readonly<JobRecord> {
    return this.#ctx.ledger.get(this.id) as Readonly<JobRecord>;
  }

  get phase(): JobPhase {
    return this.#phase;
  }

  get state(): JobState {
    return this.#phase === 'ended' && this.record?.deliveredInTurn !== undefined ? 'delivered' : this.#phase;
  }

  /** Ended, or ending now (its record being written): nothing may launch, resume or post to it. */
  get isOver(): boolean {
    return this.#phase === 'ended' || this.#ending;
  }

  /** queued → dispatched: handed to the executor as launch number `launches`. */
  dispatch(attempt: Attempt<Job>): void {
    this.attempt = attempt;
    this.launches++;
    // Durable ledger: recorded before the thread can begin, so a restart knows it may have run.
    if (this.#ctx.durable) this.#ctx.ledger.markDispatched(this.id, this.launches);
    this.#move('dispatched');
  }

  /** dispatched → running (its worker said `started`); `rerun`: a remote executor ran it again, the note says why. */
  started(threadId: number | undefined, rerun?: string): void {
    if (rerun !== undefined) this.#ctx.ledger.requeue(this.id, rerun);
    this.#ctx.ledger.markRunning(this.id, threadId);
    this.#move('running');
  }

  /**
   * dispatched or running → queued; `fresh` (a restart): from its start, launches counted anew.
   * What this run was sent and did not read is held for the next; a restart's also gets what this
   * run was handed at its launch (its record's `handedResults`): its conversation is dropped.
   */
  requeue(note: string, fresh: boolean): void {
    this.#detach();
    this.#holdUnread([]);
    if (fresh) {
      this.results.held.unshift(...(this.record.handedResults ?? []));
      this.#ctx.ledger.waits.handResults(this.id, []);
      this.#toStart();
      this.launches = 0;
    }
    if (this.record.state === 'running') this.#ctx.ledger.requeue(this.id, note);
    this.#move('queued');
  }

  /** Its next run starts from its task (or a resumed job's instruction), never from a conversation a run saved. */
  #toStart(): void {
    const { resume: _saved, heldResults: _handed, ...spec } = this.spec as JobSpec;
    this.spec = this.#startFrom ? { ...spec, resume: this.#startFrom } : spec;
  }

  /** running → suspended: it answered with children running; results it was sent and did not see are kept. */
  suspend(state: Suspension['state'], seenChildren: readonly string[]): void {
    this.#detach();
    this.#ctx.ledger.waits.suspend(this.id);
    this.suspension = { state, pending: this.results.takeUnread(seenChildren) };
    this.inbox.saved();
    this.#move('suspended');
  }

  /**
   * running → suspended: its gated calls wait for approvals (the ledger write is approvals.ts').
   * `seenChildren`: what its run read (absent: restored by recovery, no run); the rest is held.
   */
  pauseForApproval(seenChildren?: readonly string[]): void {
    if (seenChildren) this.#holdUnread(seenChildren, true);
    this.#detach();
    this.awaitingApproval = true;
    this.#move('suspended');
  }

  /** running → suspended: it sleeps until its scheduled turn (the ledger write is sleeps.ts'); `seenChildren` as for {@link pauseForApproval}. */
  fallAsleep(seenChildren?: readonly string[]): void {
    if (seenChildren) this.#holdUnread(seenChildren, true);
    this.#detach();
    this.asleep = true;
    this.#move('suspended');
  }

  /** suspended → queued: its time came; it goes on from its conversation with `resume.childResults` (the wake message). */
  wake(resume: ResumeState): void {
    this.asleep = false;
    this.#goOnFrom(resume);
    this.launches = 0;
    this.#move('queued');
  }

  /** suspended → queued: its approvals were answered; it goes on from where it paused. */
  resumeFromApproval(resume: ResumeState): void {
    this.awaitingApproval = false;
    this.#goOnFrom(resume);
    this.launches = 0;
    this.#move('queued');
  }

  /** suspended → queued: its children have ended; it runs again from its saved conversation with their results. */
  resume(): void {
    const suspension = this.suspension as Suspension;
    this.suspension = undefined;
    this.#goOnFrom({ ...suspension.state, childResults: suspension.pending.join('\n\n') });
    this.launches = 0;
    this.#move('queued');
  }

  /**
   * At launch: the results held for it join what its run goes on with, once (kept in its spec if
   * that launch is lost): a user message in a conversation it goes on from; after the approved
   * calls of an approval pause; in the first turn of a run from its task (`spec.heldResults`).
   */
  takeHeldResults(): void {
    const spec = this.spec;
    const held = this.results.held;
    if (held.length === 0 || !spec) return;
    const texts = held.splice(0);
    // Durable until its run ends: a crash before then re-runs it from its task with them (recovery.ts).
    this.#ctx.ledger.waits.handResults(this.id, [...(this.record.handedResults ?? []), ...texts]);
    this.spec = withHeldResults(spec, texts.join('\n\n'));
  }

  /** Its next run goes on from a conversation a run saved: that run read whatever its first turn was given. */
  #goOnFrom(resume: ResumeState): void {
    const { heldResults: _read, ...spec } = this.spec as JobSpec;
    this.spec = { ...spec, resume };
  }

  /**
   * Its run ended (paused, asleep, re-queued): the results posted to it that it did not read
   * (`seen`) are held for the next run. `saved`: that run saved its conversation, which goes on
   * without its `resume` (replaced at the next wake or answer): held results an approval resume
   * carried and the run never read (it slept or paused again before a model call) are held again.
   * A run re-queued after its thread died keeps its `resume`, and with it those results; a
   * restart's next run gets them from its record (see {@link requeue}).
   */
  #holdUnread(seen: readonly string[], saved = false): void {
    const resume = this.spec?.resume;
    this.results.holdUnread(seen, saved && resume?.approval ? resume.childResults : undefined);
  }

  /**
   * ended or suspended → queued: a restart from its start, same spec and id. A suspended job's
   * record is reopened in one write (`refused`: its calls answered as void), what it waited on in
   * memory is the caller's to drop (restarts.ts), and the results it held unread go to the new run.
   */
  reopen(note: string, refused: readonly ApprovalRecord[] = []): Readonly<JobRecord> {
    const waiting = this.#phase === 'suspended';
    const record = waiting ? this.#ctx.ledger.waits.restart(this.id, note, refused) : this.#ctx.ledger.reopen(this.id, note);
    // Its old run read what it was handed at its start, and that run's conversation is dropped.
    this.#toStart();
    if (this.suspension) this.results.held.push(...this.suspension.pending);
    this.suspension = undefined;
    this.awaitingApproval = false;
    this.asleep = false;
    this.#alerts = 0;
    this.ranMs = 0;
    this.runningSince = undefined;
    this.launches = 0;
    this.#move('queued');
    // No wait record holds them any more: handed to its next run now, on its record (recovery.ts reads them there).
    if (waiting) this.takeHeldResults();
    return record;
  }

  /**
   * The one ending, in this order: detaches its attempt and records the ending in the ledger
   * (with what the budget and its children add); only then is it `ended`, its waiters resolved
   * and the manager told. A second call, or one re-entered while it ends (a child stopped, a
   * listener), is a no-op. A throw is reported, never thrown: an ending runs from events, where
   * a throw would be an unhandled rejection that exits the host. If the ledger throws on the
   * record (a bug: storage failures there are lenient), the job stays in its phase; once it is
   * recorded, its waiters always get the ended record. Returns the ended record, or undefined
   * when nothing ended now.
   */
  end(ending: JobEnding): Readonly<JobRecord> | undefined {
    if (this.#phase === 'ended' || this.#ending) return undefined;
    this.#ending = true;
    let record: Readonly<JobRecord>;
    try {
      this.#detach();
      record = this.#ctx.ledger.markEnded(this.id, this.#completed(ending));
    } catch (error) {
      this.#ending = false;
      this.#ctx.reportFault(`recording the ending of job ${this.id} (it stays ${this.#phase})`, error);
      return undefined;
    }
    this.#ending = false;
    this.suspension = undefined;
    this.awaitingApproval = false;
    this.asleep = false;
    this.results.clear();
    this.stopping = false;
    this.restartPending = false;
    this.#signalCleanup?.();
    this.#signalCleanup = undefined;
    this.#moveReported('ended');
    // Resolved now, run later (a microtask): `done` listeners still come first.
    for (const resolve of this.#waiters.splice(0)) resolve(record);
    // The manager runs each of its books in its own try (see JobContext.ended); this one is for a throw it let through.
    try {
      this.#ctx.ended(this, record);
    } catch (error) {
      this.#ctx.reportFault(`ending job ${this.id}`, error);
    }
    return record;
  }

  /** The ending with what the budget and its children add; if adding throws (reported), the ending as given. */
  #completed(ending: JobEnding): JobEnding {
    try {
      return this.#ctx.completeEnding(this, ending);
    } catch (error) {
      this.#ctx.reportFault(`completing the ending of job ${this.id}`, error);
      return ending;
    }
  }

  /** Resolves with its final record once it has ended (at once if it has). */
  result(): Promise<Readonly<JobRecord>> {
    if (this.#phase === 'ended') return Promise.resolve(this.record);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** One more alert: its 1-based number, or undefined past `max` (dropped). */
  countAlert(max: number): number | undefined {
    if (this.#alerts >= max) return undefined;
    return ++this.#alerts;
  }

  /** Aborting `signal` cancels the job; the listener goes when the job ends. */
  cancelOnAbort(signal: AbortSignal, cancel: () => void): void {
    const onAbort = () => {
      if (!this.isOver) cancel();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.#signalCleanup = () => signal.removeEventListener('abort', onAbort);
  }

  #detach(): void {
    this.attempt?.dispose();
    this.attempt = undefined;
  }

  /** The move to `ended`: a listener that throws is reported, and the job has ended all the same. */
  #moveReported(to: JobPhase): void {
    const from = this.#phase;
    this.#phase = to;
    try {
      this.#ctx.moved(this, from, to);
    } catch (error) {
      this.#ctx.reportFault(`job ${this.id} moved ${from} → ${to}`, error);
    }
  }

  #move(to: JobPhase): void {
    const from = this.#phase;
    this.#phase = to;
    this.#ctx.moved(this, from, to);
  }
}
