/**
 * A job's transcript as it is kept and shown: numbered steps (a model turn with its text and the
 * tool calls it made, a tool's result, a note such as a retry), each with its time and, for a
 * model turn, its tokens. Plain data: held in memory, written as one JSON row per job
 * (sqlite-store.ts) and served as it is (`GET /v1/jobs/{id}/transcript`).
 */

/** One tool call a model turn made: its arguments as the model wrote them (redacted, cut to head and tail). */
export interface TranscriptCall {
  callId: string;
  name: string;
  args: string;
}

/** Fields every step has: `n` counts from 1 over the job's whole life (a gap: steps the cap left out); `at` is epoch ms. */
interface StepBase {
  n: number;
  at: number;
}

export type TranscriptStep =
  | (StepBase & {
      kind: 'model';
      iteration: number;
      model: string;
      /** The call's time, retries included (absent from an older worker). */
      ms?: number;
      promptTokens: number;
      completionTokens: number;
      /** What the model said this turn, if anything (redacted, capped). */
      text?: string;
      calls: TranscriptCall[];
      /** Calls of this turn past the step's cap (TRANSCRIPT_LIMITS.stepCallChars): counted, not kept. */
      callsOmitted?: number;
    })
  | (StepBase & {
      kind: 'tool';
      callId: string;
      name: string;
      ok: boolean;
      ms: number;
      /** The whole result's length, as the model read it. */
      chars: number;
      /** Its head and tail (redacted; the cut is marked in the text). */
      output: string;
    })
  | (StepBase & { kind: 'note'; text: string });

/** What a job's transcript holds: its kept steps, oldest first, and how many steps it ever had. */
export interface StoredTranscript {
  steps: TranscriptStep[];
  /** Steps appended over its life; `total - steps.length` were left out by the cap. */
  total: number;
}

/** Checked, not trusted, when read back from a ledger file: anything else is no transcript. */
export function isStoredTranscript(value: unknown): value is StoredTranscript {
  const t = value as StoredTranscript | null;
  return typeof t === 'object' && t !== null && Array.isArray(t.steps) && typeof t.total === 'number' && t.steps.every(isStep);
}

function isStep(step: unknown): boolean {
  const s = step as { n?: unknown; at?: unknown; kind?: unknown } | null;
  return typeof s === 'object' && s !== null && typeof s.n === 'number' && typeof s.at === 'number' && ['model', 'tool', 'note'].includes(s.kind as string);
}
