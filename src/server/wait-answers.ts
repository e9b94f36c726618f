import { Readable } from 'node:stream';
import type { WaitOutcome } from '../main/jobs/waits.js';
import type { JobRecord } from '../main/ledger/ledger.js';
import { WAIT_LIMITS } from '../shared/fixed-limits.js';
import { jobDetail, jobSummary } from './job-view.js';
import type { JobDetailBody, WaitEndedBody } from './responses.js';
import type { ServerState } from './server-state.js';

/** The bounds of one wait answer (WAIT_LIMITS by default; a test may pass smaller ones). */
export interface WaitAnswerLimits {
  /** Characters of one job's result a wait answer carries; the rest is read with `GET /v1/jobs/{id}/result?offset=`. */
  resultPageChars: number;
  /** Bytes of ended jobs one answer carries; past it a job comes without its result (`resultNext: 0`). */
  answerMaxBytes: number;
}

/**
 * One ended job in a wait answer: its detail with the first `pageChars` of its result,
 * `resultChars` its whole length and `resultNext` the offset to read on from (null: all here).
 */
export function pagedDetail(detail: JobDetailBody, pageChars: number): WaitEndedBody {
  const text = detail.resultText;
  if (text === null) return { ...detail, resultChars: 0, resultNext: null };
  const page = text.slice(0, pageChars);
  return { ...detail, resultText: page, resultChars: text.length, resultNext: page.length < text.length ? page.length : null };
}

/**
 * The answers of `POST /v1/jobs/wait`, bounded: at most `server.maxWaits` waits open at once
 * (the route refuses the next with 429), and each ended job serialized once, not once per
 * waiter: its paged detail is kept as scrubbed JSON bytes beside its record (records are
 * replaced, never changed, so a changed job is serialized again) and every answer that names it
 * streams the same bytes. 800 clients waiting on one 7.9 MB result once took the server's heap.
 */
export class WaitAnswers {
  readonly #state: ServerState;
  readonly #maxWaits: number;
  readonly #limits: WaitAnswerLimits;
  /** Per record: its entry with a result page, and without its result (past the answer's bound). */
  readonly #paged = new WeakMap<Readonly<JobRecord>, Buffer>();
  readonly #bare = new WeakMap<Readonly<JobRecord>, Buffer>();
  #open = 0;

  constructor(state: ServerState, maxWaits: number, limits: Partial<WaitAnswerLimits> = {}) {
    this.#state = state;
    this.#maxWaits = maxWaits;
    this.#limits = { resultPageChars: WAIT_LIMITS.resultPageChars, answerMaxBytes: WAIT_LIMITS.answerMaxBytes, ...limits };
  }

  get open(): number {
    return this.#open;
  }

  /** A wait may begin (then call {@link release} once), or false: `maxWaits` are open. */
  admit(): boolean {
    if (this.#open >= this.#maxWaits) return false;
    this.#open++;
    return true;
  }

  release(): void {
    this.#open--;
  }

  get maxWaits(): number {
    return this.#maxWaits;
  }

  /** The answer's JSON as a stream of shared byte chunks (a Buffer passes the key scrubber untouched: each part is scrubbed here). */
  body(outcome: WaitOutcome, now = Date.now()): Readable {
    const { manager, progress } = this.#state;
    const scrub = (text: string) => Buffer.from(this.#state.scrub(text));
    const chunks: Buffer[] = [scrub(`{"timedOut":${outcome.timedOut},"waitedMs":${JSON.stringify(outcome.waitedMs)},"ended":[`)];
    let bytes = 0;
    outcome.ended.forEach((record, i) => {
      let entry = this.#entry(record, this.#paged, this.#limits.resultPageChars);
      if (bytes + entry.length > this.#limits.answerMaxBytes) entry = this.#entry(record, this.#bare, 0);
      bytes += entry.length;
      if (i > 0) chunks.push(COMMA);
      chunks.push(entry);
    });
    const running = outcome.running.map((record) => jobSummary(record, progress.get(record.id), now, manager.budgetOf(record.id)));
    chunks.push(scrub(`],"running":${JSON.stringify(running)}}`));
    return Readable.from(chunks, { objectMode: false });
  }

  #entry(record: Readonly<JobRecord>, cache: WeakMap<Readonly<JobRecord>, Buffer>, pageChars: number): Buffer {
    const kept = cache.get(record);
    if (kept) return kept;
    const detail = pagedDetail(jobDetail(record, this.#state.progress.get(record.id)), pageChars);
    const bytes = Buffer.from(this.#state.scrub(JSON.stringify(detail)));
    cache.set(record, bytes);
    return bytes;
  }
}

const COMMA = Buffer.from(',');
