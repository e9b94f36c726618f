import type { ForkpoolConfig } from '../../shared/config.js';
import { retryLine } from '../../shared/model-errors.js';
import { TRANSCRIPT_LIMITS } from '../../shared/fixed-limits.js';
import type { LoopEvent } from '../../shared/loop-events.js';
import { capHeadTail } from '../../shared/text-budget.js';
import { redactionSecrets } from '../../shared/tools/host-secrets.js';
import { redactToolOutput } from '../../shared/tools/secrets.js';
import type { DeliveryLedger } from '../ledger/ledger.js';
import type { JobStore } from '../ledger/ledger-store.js';
import type { StoredTranscript, TranscriptStep } from '../ledger/transcript.js';

export type { StoredTranscript, TranscriptCall, TranscriptStep } from '../ledger/transcript.js';

/** One page of a job's transcript (see {@link JobTranscripts.read}). */
export interface TranscriptPage {
  jobId: string;
  /** The job's place in the agent tree (its record's `branch`), when the record has one. */
  branch?: string;
  /** Steps the job ever had; `omitted` of them were left out by the cap (their numbers are missing). */
  total: number;
  omitted: number;
  /** Index of the first step of this page among the kept steps, and how many kept steps there are. */
  offset: number;
  kept: number;
  steps: TranscriptStep[];
}

/** The caps of one transcript (TRANSCRIPT_LIMITS by default; a test may pass smaller ones). */
export interface TranscriptCaps {
  maxSteps: number;
  maxChars: number;
  headSteps: number;
  heldEnded: number;
  stepCallChars: number;
}

type ModelStep = Extract<TranscriptStep, { kind: 'model' }>;

interface Held {
  transcript: StoredTranscript;
  /** Characters of text its kept steps hold (text, arguments, outputs), for the cap. */
  chars: number;
  /** The newest model step while it is kept: its tool calls follow its response. */
  turn?: ModelStep | undefined;
  /** Characters its calls hold, against `stepCallChars` (counted as they come: one response may make thousands). */
  turnCallChars: number;
}

/**
 * Every job's transcript, built from its progress events: a model turn (its tokens, time, text
 * and tool calls with their arguments), each tool's result (head and tail), and notes (retries,
 * loop warnings, interrupts). Each text is redacted with every secret the config holds before it
 * is kept (the worker redacts with its client's key; this is the second line). Bounded per job
 * (`maxSteps`, `maxChars`: the first `headSteps` stay, the oldest after them go) and in number
 * (`heldEnded` ended jobs in memory). With a durable ledger an ended job's transcript is written
 * beside its row; retention drops it with the job's result, and forget with the job.
 */
export class JobTranscripts {
  readonly #ledger: DeliveryLedger;
  readonly #store: JobStore | undefined;
  readonly #secrets: readonly string[];
  readonly #caps: TranscriptCaps;
  readonly #live = new Map<string, Held>();
  /** Ended jobs' transcripts, oldest first (a Map keeps insertion order). */
  readonly #ended = new Map<string, Held>();

  constructor(config: ForkpoolConfig, ledger: DeliveryLedger, store: JobStore | undefined, caps: Partial<TranscriptCaps> = {}) {
    this.#ledger = ledger;
    this.#store = store;
    this.#secrets = redactionSecrets(config);
    this.#caps = { ...TRANSCRIPT_LIMITS, ...caps };
  }

  /** A progress event of a job: a new step, or more of its last model turn (its text, a tool call). */
  record(jobId: string, event: LoopEvent, at = Date.now()): void {
    const held = this.#live.get(jobId) ?? this.#start(jobId);
    const last = held.transcript.steps.at(-1);
    // A progress event is checked for its type only where it enters (protocol.ts): its fields are read defensively.
    const clean = (text: unknown, max: number) => (typeof text === 'string' ? capHeadTail(redactToolOutput(text, this.#secrets), max) : '');
    const { event: limits } = TRANSCRIPT_LIMITS;
    switch (event.type) {
      case 'model_response':
        return this.#appendTurn(held, {
          n: 0,
          at,
          kind: 'model',
          iteration: count(event.iteration),
          model: clean(event.model, 200),
          ...(typeof event.ms === 'number' ? { ms: event.ms } : {}),
          promptTokens: count(event.usage?.promptTokens),
          completionTokens: count(event.usage?.completionTokens),
          calls: [],
        });
      case 'assistant_text':
        if (last?.kind !== 'model' || last.iteration !== event.iteration) return;
        return this.#amend(held, () => {
          const before = last.text?.length ?? 0;
          last.text = clean(event.text, limits.textChars);
          return last.text.length - before;
        });
      case 'tool_call':
        return this.#addCall(held, event, clean);
      case 'tool_result':
        return this.#append(held, {
          n: 0,
          at,
          kind: 'tool',
          callId: clean(event.callId, 200),
          name: clean(event.name, 200),
          ok: event.ok === true,
          ms: count(event.ms),
          chars: count(event.chars),
          output: clean(event.output ?? '', limits.outputChars),
        });
      case 'retry':
        return this.#note(
          held,
          at,
          retryLine({
            attempt: count(event.attempt),
            delayMs: count(event.delayMs),
            reason: clean(event.reason, 300),
            ...(typeof event.status === 'number' ? { status: event.status } : {}),
            ...(typeof event.host === 'string' ? { host: clean(event.host, 200) } : {}),
            ...(typeof event.maxRetries === 'number' ? { maxRetries: count(event.maxRetries) } : {}),
          }),
        );
      case 'loop_warning':
        return this.#note(held, at, `loop warning: ${clean(event.name, 200)} called with the same arguments ${count(event.repeats)} times`);
      case 'model_interrupted':
        return this.#note(held, at, `model call ${count(event.iteration)} interrupted by a message`);
      case 'messages_received':
        return this.#note(held, at, `messages received: ${Array.isArray(event.ids) ? event.ids.map(count).join(', ') : ''}`);
      default:
        return;
    }
  }

  /** A step of its own in a job's transcript, e.g. an approval asked for or answered (approvals.ts). */
  note(jobId: string, text: string, at = Date.now()): void {
    const held = this.#live.get(jobId) ?? this.#start(jobId);
    this.#note(held, at, capHeadTail(redactToolOutput(text, this.#secrets), TRANSCRIPT_LIMITS.event.textChars));
  }

  /** The job ended: its transcript is written to the durable ledger and held among the ended ones. */
  ended(jobId: string): void {
    const held = this.#live.get(jobId);
    if (!held) return;
    this.#live.delete(jobId);
    this.#ended.delete(jobId);
    this.#ended.set(jobId, held);
    if (this.#ended.size > this.#caps.heldEnded) this.#ended.delete(this.#ended.keys().next().value as string);
    const store = this.#store;
    if (store) this.#ledger.writeAside(`job ${jobId}'s transcript`, () => store.putTranscript(jobId, held.transcript));
  }

  /** One page of a job's kept steps (`offset` among them, at most `limit`); no steps when none is kept for it (not begun, or dropped). */
  read(jobId: string, offset = 0, limit: number = TRANSCRIPT_LIMITS.pageMax): TranscriptPage {
    const transcript = this.#live.get(jobId)?.transcript ?? this.#ended.get(jobId)?.transcript ?? this.#store?.transcript(jobId);
    const { steps, total } = transcript ?? { steps: [], total: 0 };
    const from = Math.max(0, Math.min(offset, steps.length));
    const branch = this.#ledger.get(jobId)?.branch;
    return {
      jobId,
      ...(branch !== undefined ? { branch } : {}),
      total,
      omitted: total - steps.length,
      offset: from,
      kept: steps.length,
      steps: structuredClone(steps.slice(from, from + Math.max(0, limit))),
    };
  }

  /** Retention dropped the job's result, or forgot the job: its transcript goes (from the durable ledger too). */
  drop(jobId: string): void {
    this.#live.delete(jobId);
    this.#ended.delete(jobId);
    const store = this.#store;
    if (store) this.#ledger.writeAside(`drop job ${jobId}'s transcript`, () => store.dropTranscript(jobId));
  }

  #start(jobId: string): Held {
    // A job that runs again (a restart) goes on with the transcript it had.
    const before = this.#ended.get(jobId);
    this.#ended.delete(jobId);
    const held = before ?? { transcript: { steps: [], total: 0 }, chars: 0, turnCallChars: 0 };
    this.#live.set(jobId, held);
    return held;
  }

  #note(held: Held, at: number, text: string): void {
    this.#append(held, { n: 0, at, kind: 'note', text });
  }

  #append(held: Held, step: TranscriptStep): void {
    const { transcript } = held;
    step.n = ++transcript.total;
    transcript.steps.push(step);
    held.chars += charsOf(step);
    this.#cap(held);
  }

  #appendTurn(held: Held, step: ModelStep): void {
    held.turn = step;
    held.turnCallChars = 0;
    this.#append(held, step);
  }

  /**
   * One tool call of the newest model turn. Past `stepCallChars` the call is counted in
   * `callsOmitted`, not kept: a step stays bounded, and each call costs the same however many
   * came before it (no re-counting of the step).
   */
  #addCall(held: Held, event: Extract<LoopEvent, { type: 'tool_call' }>, clean: (text: unknown, max: number) => string): void {
    const turn = held.turn;
    if (!turn) return;
    const call = {
      callId: clean(event.callId, 200),
      name: clean(event.name, 200),
      args: clean(event.args ?? event.argsPreview, TRANSCRIPT_LIMITS.event.argsChars),
    };
    // At least one character a call, so calls with nothing in them are bounded too.
    const size = Math.max(1, call.callId.length + callChars(call));
    if (held.turnCallChars + size > this.#caps.stepCallChars) {
      turn.callsOmitted = (turn.callsOmitted ?? 0) + 1;
      return;
    }
    held.turnCallChars += size;
    this.#amend(held, () => {
      turn.calls.push(call);
      return callChars(call);
    });
  }

  /** Changes a kept step (its text, one more call); `change` returns the characters it added, counted against the cap. */
  #amend(held: Held, change: () => number): void {
    held.chars += change();
    this.#cap(held);
  }

  /** Past a cap the oldest step after the head goes (the head says how the job began; the rest is its latest work). */
  #cap(held: Held): void {
    const { steps } = held.transcript;
    const head = Math.min(this.#caps.headSteps, this.#caps.maxSteps - 1);
    while (steps.length > 1 && (steps.length > this.#caps.maxSteps || held.chars > this.#caps.maxChars)) {
      // Only the newest step is left after the head: a single step larger than the cap is kept.
      if (steps.length <= head + 1) break;
      const [gone] = steps.splice(head, 1);
      if (gone) held.chars -= charsOf(gone);
      // Calls of a turn no longer kept are not kept either.
      if (gone === held.turn) held.turn = undefined;
    }
  }
}

/** A count from an event: a finite number, else 0. */
function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function callChars(call: { name: string; args: string }): number {
  return call.name.length + call.args.length;
}

/** The text a step holds, for the character cap. */
function charsOf(step: TranscriptStep): number {
  if (step.kind === 'model') return (step.text?.length ?? 0) + step.calls.reduce((n, c) => n + callChars(c), 0);
  if (step.kind === 'tool') return step.output.length;
  return step.text.length;
}
