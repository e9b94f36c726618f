import { z } from 'zod';
import { named } from './responses.js';

// The bodies of a job's transcript (GET /v1/jobs/{id}/transcript), named in the API document like every body of responses.ts.

// --- A job's transcript (GET /v1/jobs/{id}/transcript; src/main/jobs/transcripts.ts) ---------
const stepBase = { n: z.number().int().describe('Counts from 1 over the job; a gap: steps the cap left out.'), at: z.number().describe('Epoch ms.') };

/** One step of a transcript: a model turn, a tool result, or a note (a retry, a loop warning...). */
export const transcriptStepShape = named(
  'TranscriptStep',
  z.discriminatedUnion('kind', [
    z.object({
      ...stepBase,
      kind: z.literal('model'),
      iteration: z.number().int(),
      model: z.string(),
      ms: z.number().optional().describe("The call's time, retries included."),
      promptTokens: z.number(),
      completionTokens: z.number(),
      text: z.string().optional().describe('What the model said (redacted, head and tail).'),
      calls: z.array(z.object({ callId: z.string(), name: z.string(), args: z.string().describe('As the model wrote them (redacted, head and tail).') })),
      callsOmitted: z.number().int().optional().describe("This turn's calls past the step's cap (20,000 characters of calls): counted, not kept."),
    }),
    z.object({
      ...stepBase,
      kind: z.literal('tool'),
      callId: z.string(),
      name: z.string(),
      ok: z.boolean(),
      ms: z.number(),
      chars: z.number().describe('The whole result the model read.'),
      output: z.string().describe('Its head and tail (redacted; the cut is marked).'),
    }),
    z.object({ ...stepBase, kind: z.literal('note'), text: z.string() }),
  ]),
);

export const transcriptPageShape = named(
  'TranscriptPage',
  z.object({
    jobId: z.string(),
    branch: z.string().optional().describe("Its place in the agent tree (the record's `branch`), when the record has one."),
    total: z.number().int().describe('Steps the job ever had.'),
    omitted: z.number().int().describe('Of them, left out by the per-job cap.'),
    offset: z.number().int(),
    kept: z.number().int().describe('Steps kept; page through them with offset.'),
    next: z.number().int().nullable().describe('The offset of the next page; null on the last.'),
    dropped: z.boolean().describe("Retention dropped the job's result, and its transcript with it."),
    steps: z.array(transcriptStepShape),
  }),
);
// --- end of the transcript's schemas -----------------------------------------------------------
