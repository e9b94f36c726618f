import type { JoinPolicy } from '../../shared/scheduling-config.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { JobScheduler } from '../executors/scheduler.js';

export type { JoinPolicy } from '../../shared/scheduling-config.js';

/** What a wave's check found: it ended, or its join let a follow-up come early. */
export type WaveCheck = { kind: 'all'; members: string[] } | { kind: 'early'; reason: 'quorum' | 'deadline'; ended: string[]; pending: string[] };

interface WaveEntry {
  members: Set<string>;
  sealed: boolean;
  join: JoinPolicy | undefined;
  deadlinePassed: boolean;
  /** An early follow-up was already owed once; the rest wait for the wave's end. */
  joinedEarly: boolean;
  timer: unknown;
}

/**
 * The jobs an agent spawned in one turn form a wave. A wave can only end once its turn is over
 * (sealed): jobs of one message are spawned one after another, and the first may end before the
 * last is spawned. Each wave ends once. Its join may let one follow-up come earlier: when
 * `quorum` members have ended, or at `deadlineSeconds` after the spawn that set the join (with
 * at least one ended by then; else at the first that ends after it). The rest then come with the
 * wave's end, by the usual path.
 */
export class WaveJoins {
  readonly #waves = new Map<number, WaveEntry>();
  readonly #scheduler: JobScheduler;
  readonly #defaultJoin: JoinPolicy | undefined;
  readonly #onDeadline: (wave: number) => void;

  constructor(scheduler: JobScheduler, defaultJoin: JoinPolicy | undefined, onDeadline: (wave: number) => void) {
    this.#scheduler = scheduler;
    this.#defaultJoin = defaultJoin;
    this.#onDeadline = onDeadline;
  }

  /** Adds a member; `join` (a spawn's own) replaces the wave's join, the config's being the default. */
  add(wave: number, jobId: string, join?: JoinPolicy): void {
    let entry = this.#waves.get(wave);
    if (!entry) {
      entry = { members: new Set(), sealed: false, join: undefined, deadlinePassed: false, joinedEarly: false, timer: undefined };
      this.#waves.set(wave, entry);
      this.#setJoin(wave, entry, this.#defaultJoin);
    }
    entry.members.add(jobId);
    if (join) this.#setJoin(wave, entry, join);
  }

  /** The join a wave has now (for the spawn tool's answer). */
  joinOf(wave: number): JoinPolicy | undefined {
    return this.#waves.get(wave)?.join;
  }

  /**
   * A member restarted after it ended leaves its wave: it is delivered as a job of its own, and
   * the wave must not wait for it. True when the wave is still to fire (check it now: the
   * others may all have ended); a wave left with no member is forgotten.
   */
  leave(wave: number, jobId: string): boolean {
    const entry = this.#waves.get(wave);
    if (!entry?.members.delete(jobId)) return false;
    if (entry.members.size > 0) return true;
    this.#scheduler.clear(entry.timer);
    this.#waves.delete(wave);
    return false;
  }

  seal(wave: number): boolean {
    const entry = this.#waves.get(wave);
    if (entry) entry.sealed = true;
    return entry !== undefined;
  }

  check(wave: number, isEnded: (jobId: string) => boolean): WaveCheck | undefined {
    const entry = this.#waves.get(wave);
    if (!entry || !entry.sealed) return undefined;
    const members = [...entry.members];
    const ended = members.filter(isEnded);
    if (ended.length === members.length) {
      // Fired waves are forgotten: a long session has one per parent turn.
      this.#scheduler.clear(entry.timer);
      this.#waves.delete(wave);
      return { kind: 'all', members };
    }
    if (entry.joinedEarly || ended.length === 0) return undefined;
    const quorum = entry.join?.quorum;
    const reason = quorum !== undefined && ended.length >= quorum ? 'quorum' : entry.deadlinePassed ? 'deadline' : undefined;
    if (!reason) return undefined;
    entry.joinedEarly = true;
    this.#scheduler.clear(entry.timer);
    return { kind: 'early', reason, ended, pending: members.filter((id) => !isEnded(id)) };
  }

  /** Clears every deadline timer (the manager is closing). */
  dispose(): void {
    for (const entry of this.#waves.values()) this.#scheduler.clear(entry.timer);
  }

  #setJoin(wave: number, entry: WaveEntry, join: JoinPolicy | undefined): void {
    entry.join = join;
    this.#scheduler.clear(entry.timer);
    entry.timer = undefined;
    entry.deadlinePassed = false;
    if (join?.deadlineSeconds === undefined) return;
    const fire = () => {
      entry.deadlinePassed = true;
      this.#onDeadline(wave);
    };
    entry.timer = this.#scheduler.set(fire, Math.round(join.deadlineSeconds * 1000), { jobId: `wave:${wave}`, kind: 'wave-deadline' });
  }
}

/** One line each, for the early follow-up: what of the wave is still running, by name and label. */
export function formatStillRunning(wave: number, jobs: readonly Pick<JobRecord, 'id' | 'label' | 'name'>[]): string {
  if (jobs.length === 0) return '';
  const lines = [`[Still running from turn ${wave}'s wave; each result comes in a later turn, once]`];
  for (const job of jobs) lines.push(`- job ${job.id}${job.name ? ` (name ${oneLine(job.name)})` : ''} "${oneLine(job.label)}"`);
  return lines.join('\n');
}

function oneLine(value: string): string {
  const flat = value
    .replace(/[\r\n\t]+/g, ' ')
    .replace(/["<>[\]]/g, "'")
    .trim();
  return flat.length > 80 ? `${flat.slice(0, 79)}…` : flat;
}
